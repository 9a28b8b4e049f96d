#!/usr/bin/env python3
"""Writes samples of Python logging's formats with the real logging module.

usage: python_logging.py OUTDIR   (writes python_default, python_asctime, python_flask,
python_plain into OUTDIR/<case>/input)
"""
import logging
import os
import sys

LAYOUTS = {
    # logging.basicConfig() without a format: BASIC_FORMAT
    "python_default": logging.BASIC_FORMAT,
    # the format of the logging HOWTO and most tutorials
    "python_asctime": "%(asctime)s - %(name)s - %(levelname)s - %(message)s",
    # Flask's documented dictConfig format
    "python_flask": "[%(asctime)s] %(levelname)s in %(module)s: %(message)s",
    # the shortest common one
    "python_plain": "%(asctime)s %(levelname)s %(message)s",
}


def emit(path, fmt):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        handler = logging.StreamHandler(out)
        handler.setFormatter(logging.Formatter(fmt))
        root = logging.getLogger()
        root.handlers[:] = [handler]
        root.setLevel(logging.DEBUG)
        db = logging.getLogger("app.db")
        root.debug("loading configuration from %s", "/etc/app.toml")
        root.info("server listening on port %d", 8080)
        db.warning("slow query took %d ms", 1200)
        db.error("connection refused: %s:%d", "10.0.0.5", 5432)
        root.critical("out of memory, shutting down")
        logging.getLogger("app.http").info("GET /health -> 200")
        root.handlers[:] = []


def main():
    outdir = sys.argv[1]
    for case, fmt in LAYOUTS.items():
        emit(os.path.join(outdir, case, "input"), fmt)


if __name__ == "__main__":
    main()
