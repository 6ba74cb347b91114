"""The version of clradix, in a module of its own so that any clradix module can import it."""

__version__ = "0.1.0"
