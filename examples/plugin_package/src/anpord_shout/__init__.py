"""An example anpord plugin package: the ``shout`` harness and the ``tally`` reporter."""
