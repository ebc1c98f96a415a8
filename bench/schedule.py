"""Zero-driver-cost schedules of the two rollout policies, and the lockstep check.

Given the service time of every turn of every episode (recorded by the
simulated engine), these replay each policy on an idealised engine, so the
measured runs can be split into what the policy costs and what the driver
costs.
"""

from __future__ import annotations

import heapq
from collections import deque

Work = list[list[list[float]]]  # question -> episode -> service time per turn


def async_schedule_s(work: Work, slots: int, concurrency: int) -> float:
    """Makespan of the async policy with zero driver cost.

    Questions start in order, at most ``concurrency`` at a time; each episode
    sends its next turn as soon as the last returns; the engine serves
    requests first come, first served on ``slots`` slots.
    """
    ready: deque[tuple[int, int, int]] = deque()
    running: list[tuple[float, int, int, int]] = []
    left: dict[int, int] = {}
    now, free, started = 0.0, slots, 0

    def start_question() -> None:
        nonlocal started
        left[started] = len(work[started])
        ready.extend((started, e, 0) for e in range(len(work[started])))
        started += 1

    while started < min(concurrency, len(work)):
        start_question()
    while True:
        while free and ready:
            q, e, k = ready.popleft()
            heapq.heappush(running, (now + work[q][e][k], q, e, k))
            free -= 1
        if not running:
            return now
        now, q, e, k = heapq.heappop(running)
        free += 1
        if k + 1 < len(work[q][e]):
            ready.append((q, e, k + 1))
        else:
            left[q] -= 1
            if not left[q] and started < len(work):
                start_question()


def lockstep_schedule_s(work: Work, slots: int, batch: int) -> float:
    """Makespan of the lockstep policy with zero driver cost."""
    total = 0.0
    for b in range(0, len(work), batch):
        episodes = [ep for q in work[b : b + batch] for ep in q]
        for k in range(max(len(ep) for ep in episodes)):
            # the final turns (each episode's last) go out together at the end
            step = [ep[k] for ep in episodes if k < len(ep) - 1]
            if not step:
                step = [ep[-1] for ep in episodes]
            finish = [0.0] * slots
            for service in step:
                heapq.heappush(finish, heapq.heappop(finish) + service)
            total += max(finish)
    return total


def lockstep_violations(trace: list[tuple[int, int, float, float]]) -> int:
    """Turns that started before every turn of the previous step had ended."""
    last_end: dict[tuple[int, int], float] = {}
    for b, k, _, end in trace:
        last_end[(b, k)] = max(end, last_end.get((b, k), 0.0))
    return sum(1 for b, k, start, _ in trace if k > 0 and start < last_end[(b, k - 1)])
