"""Accounts for the club's treasurer: deposits, withdrawals with an overdraft limit, transfers,
and a monthly statement. Amounts are integer cents; every change is an entry in the journal.
"""

import itertools
from dataclasses import dataclass, field
from datetime import date
import itertools


class LedgerError(Exception):
    """A booking the ledger refuses; nothing was changed."""


@dataclass
class Account:
    name: str
    balance: int = 0
    overdraft: int = 0  # how far below zero the balance may go

    def can_pay(self, cents):
        return self.balance - cents >= -self.overdraft


@dataclass
class Entry:
    number: int
    day: date
    account: str
    cents: int  # positive in, negative out
    memo: str


@dataclass
class Ledger:
    accounts: dict = field(default_factory=dict)
    journal: list = field(default_factory=list)
    counter: itertools.count = field(default_factory=lambda: itertools.count(1))

    def open(self, name, overdraft=0):
        if name in self.accounts:
            raise LedgerError(f"account {name!r} exists")
        self.accounts[name] = Account(name, 0, overdraft)
        return self.accounts[name]

    def account(self, name):
        try:
            return self.accounts[name]
        except KeyError:
            raise LedgerError(f"no account {name!r}") from None

    def _book(self, day, name, cents, memo):
        self.account(name).balance += cents
        self.journal.append(Entry(next(self.counter), day, name, cents, memo))

    def deposit(self, day, name, cents, memo="deposit"):
        if cents <= 0:
            raise LedgerError("deposits must be positive")
        self._book(day, name, cents, memo)

    def withdraw(self, day, name, cents, memo="withdrawal"):
        if cents <= 0:
            raise LedgerError("withdrawals must be positive")
        if not self.account(name).can_pay(cents):
            raise LedgerError(f"{name}: not enough funds for {cents / 100:.2f}")
        self._book(day, name, -cents, memo)

    def transfer(self, day, source, target, cents, memo="transfer"):
        """Move money between two accounts: both entries are booked, or neither."""
        self.account(target)
        if source == target:
            raise LedgerError("cannot transfer to the same account")
        self.withdraw(day, source, cents, f"{memo} to {target}")
        self._book(day, target, cents, f"{memo} from {source}")


def balance_on(ledger, name, day):
    """The balance of `name` at the end of `day`, from the journal."""
    return sum(e.cents for e in ledger.journal if e.account == name and e.day <= day)


def statement(ledger, name, year, month):
    """The statement text: opening balance, the month's entries, closing balance."""
    entries = [e for e in ledger.journal
               if e.account == name and (e.day.year, e.day.month) == (year, month)]
    first = date(year, month, 1)
    opening = sum(e.cents for e in ledger.journal if e.account == name and e.day < first)
    lines = [f"Statement {name} {year}-{month:02d}", f"{'opening':<30}{opening / 100:>12.2f}"]
    running = opening
    for e in entries:
        running += e.cents
        lines.append(f"{e.day:%d.%m} {e.memo:<24.24}{e.cents / 100:>12.2f}")
    lines.append(f"{'closing':<30}{running / 100:>12.2f}")
    return "\n".join(lines)


def overdrawn(ledger):
    """Names of accounts below zero, most overdrawn first."""
    below = [a for a in ledger.accounts.values() if a.balance < 0]
    return [a.name for a in sorted(below, key=lambda a: a.balance)]


def check_journal(ledger):
    """True when every account's balance equals the sum of its journal entries."""
    sums = {}
    for e in ledger.journal:
        sums[e.account] = sums.get(e.account, 0) + e.cents
    return all(a.balance == sums.get(a.name, 0) for a in ledger.accounts.values())
