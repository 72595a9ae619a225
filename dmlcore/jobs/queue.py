"""The fair order in which the owners' jobs start (deficit round robin by estimated seconds)."""

from __future__ import annotations

from collections import deque

QUANTUM = 60.0          # seconds of estimated compute an owner may start per turn


class FairQueue:
    """Deficit round robin over owners, by estimated seconds of compute.

    Owners take turns in the order they queued; a turn lets the owner start fits worth up to
    ``quantum`` seconds (credit left over carries to its next turn while it keeps a queue). A
    demo batch (a few fits, well under a quantum) therefore runs as one piece and each user's
    demo finishes as soon as its own fits are done, in the order of the clicks, while a long
    batch starts one quantum's worth of fits and then lets everyone else have a turn. Jobs of
    unknown cost count one quantum: plain round robin, one job per turn.
    """

    def __init__(self, quantum: float = QUANTUM):
        if quantum <= 0:
            raise ValueError(f"quantum must be positive; got {quantum}.")
        self.quantum = quantum
        self.queues: dict[str, deque] = {}
        self.turns: deque[str] = deque()
        self.credit: dict[str, float] = {}
        self.credited: str | None = None   # the owner at the head that got this turn's quantum

    def __bool__(self) -> bool:
        return bool(self.turns)

    def push(self, job) -> None:
        if job.owner not in self.queues:
            self.queues[job.owner] = deque()
            self.turns.append(job.owner)
            self.credit[job.owner] = 0.0
        self.queues[job.owner].append(job)

    def remove(self, job) -> None:
        queue = self.queues[job.owner]
        queue.remove(job)
        if not queue:
            self._drop(job.owner)

    def pop(self):
        """The next job to start; the queue must not be empty."""
        while True:
            owner = self.turns[0]
            if self.credited != owner:
                self.credit[owner] += self.quantum
                self.credited = owner
            queue = self.queues[owner]
            if queue[0].cost <= self.credit[owner]:
                job = queue.popleft()
                self.credit[owner] -= job.cost
                if not queue:
                    self._drop(owner)
                return job
            self.turns.rotate(-1)
            self.credited = None

    def order(self) -> list:
        """Every queued job in the order it would start (the queue is left as it is)."""
        twin = FairQueue(self.quantum)
        twin.queues = {owner: deque(queue) for owner, queue in self.queues.items()}
        twin.turns, twin.credit, twin.credited = deque(self.turns), dict(self.credit), self.credited
        out = []
        while twin:
            out.append(twin.pop())
        return out

    def _drop(self, owner: str) -> None:
        del self.queues[owner], self.credit[owner]
        self.turns.remove(owner)
        if self.credited == owner:
            self.credited = None
