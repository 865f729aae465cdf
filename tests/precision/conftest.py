import pathlib


def line_of(marker: str) -> str:
    """'file:line' of the test-source line carrying ``marker`` (a trailing comment)."""
    for path in pathlib.Path(__file__).parent.glob("test_*.py"):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            if text.rstrip().endswith(f"# {marker}"):
                return f"{path}:{number}"
    raise LookupError(marker)
