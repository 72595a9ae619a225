"""A local socket over which worker processes report progress and hear of a cancel."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from multiprocessing.connection import Client, Listener

logger = logging.getLogger("dmlcore.jobs")

FLUSH_SECONDS = 0.25    # a worker sends its progress at most this often (and at each stage)


class Channel:
    """A local socket on which worker processes report a job's progress and hear of its cancel.

    ``ticket`` (address, key) travels with each fit; a worker opens a :class:`Link` with it.
    Only holders of the random key can connect.
    """

    def __init__(self, registry, host: str = "127.0.0.1"):
        key = secrets.token_bytes(32)
        self._listener = Listener((host, 0), authkey=key)
        self.ticket = (self._listener.address, key)
        self._registry = registry
        self._closed = False
        threading.Thread(target=self._accept, name="dmlcore-channel", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except Exception:   # a client that failed the key check, or the listener closed
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        job_id = None
        try:
            job_id = conn.recv()
            self._registry._attach(job_id, conn)
            while True:
                self._registry._report_many(job_id, conn.recv())
        except (EOFError, OSError):
            pass
        finally:
            if job_id is not None:
                self._registry._detach(job_id, conn)
            conn.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()


class Link:
    """A worker's end of the channel: ``report`` batches events, ``should_stop`` reads a cancel.

    Without a server to report to (it could not be reached) the fit runs without progress; a
    link that breaks mid-fit stops the fit (nobody is left to take its result).
    """

    def __init__(self, ticket, job_id: str):
        self._conn, self._buffer, self._sent, self.stopped = None, [], 0.0, False
        try:
            address, key = ticket
            self._conn = Client(address, authkey=key)
            self._conn.send(job_id)
        except Exception:
            logger.warning("Job %s cannot reach the server's progress channel; no live progress", job_id)
            self._conn = None

    def __enter__(self) -> Link:
        return self

    def __exit__(self, *exc) -> None:
        self.flush()
        if self._conn is not None:
            self._conn.close()

    def report(self, event: dict) -> None:
        self._buffer.append(event)
        if event.get("type") == "stage" or time.monotonic() - self._sent > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._conn is not None and self._buffer:
            try:
                self._conn.send(self._buffer)
            except OSError:
                self._conn, self.stopped = None, True
        self._buffer, self._sent = [], time.monotonic()

    def should_stop(self) -> bool:
        try:
            while not self.stopped and self._conn is not None and self._conn.poll():
                self.stopped = self._conn.recv() == "stop"
        except (EOFError, OSError):
            self._conn, self.stopped = None, True
        return self.stopped


def send_stop(conn) -> None:
    try:
        conn.send("stop")
    except OSError:
        pass
