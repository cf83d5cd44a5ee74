"""Reading, prompting, decoding and diffing: the editing pipeline."""
