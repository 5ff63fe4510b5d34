"""Chapter figures too long for a notebook cell (one function per figure)."""
