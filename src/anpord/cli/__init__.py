"""The ``anpord`` command line. Each command lives in its own module, imported only when used."""
