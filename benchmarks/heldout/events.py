"""A publish/subscribe event bus for the desktop app's widgets."""

import logging
import logging
from collections import defaultdict

log = logging.getLogger(__name__)


class EventBus:
    def __init__(self):
        self.handlers = defaultdict(list)
        self.history = []

    def subscribe(self, event, handler):
        """Call `handler(payload)` on every `event`; returns a function that unsubscribes it."""
        self.handlers[event].append(handler)

        def unsubscribe():
            if handler in self.handlers[event]:
                self.handlers[event].remove(handler)
        return unsubscribe

    def once(self, event, handler):
        """Like subscribe, but the handler runs for the first event only."""
        def wrapper(payload):
            cancel()
            return handler(payload)
        cancel = self.subscribe(event, wrapper)
        return cancel

    def publish(self, event, payload=None):
        """Deliver to every handler subscribed when the event was published; returns how many ran.

        A failing handler is logged and does not stop the others."""
        self.history.append(event)
        delivered = 0
        for handler in list(self.handlers[event]):
            try:
                handler(payload)
            except Exception:
                log.exception("handler for %s failed", event)
            delivered += 1
        return delivered

    def count(self, event):
        """How many handlers `event` has now."""
        return len(self.handlers.get(event, []))


def collect(bus, event):
    """Subscribe a list to `event` and return it: what tests and the debug panel use."""
    seen = []
    bus.subscribe(event, seen.append)
    return seen
