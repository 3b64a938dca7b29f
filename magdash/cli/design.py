"""placeholder"""


def register(subparsers) -> None:
    return None
