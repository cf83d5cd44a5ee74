"""Fine-tuning the span selector: mined and synthetic edit pairs → copy-mode prompts + oracle programs."""
