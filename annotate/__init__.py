"""The vetting TUI for annotators (installed as ``fbi.annotate``)."""
