"""URL slugs from titles."""

import re


def slugify(title: str, max_length: int = 60) -> str:
    """``"Hello, World!"`` → ``"hello-world"``: lowercase ASCII words joined by single hyphens,
    at most ``max_length`` characters, never ending in a hyphen."""
    words = re.split(r"[^a-z0-9]", title.lower())
    slug = "-".join(words)
    return slug[:max_length]
