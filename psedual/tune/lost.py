"""A trial whose node died under it (a preemption, a crashed or removed machine): told apart from a
trial that failed by itself, so the runs table records it as `lost` (the node and when), never as
an early stop or a plain error, and the job says to rerun it (`--resume NAME`).

Ray reports a lost node to Tune as the trial actor's death (`ActorDiedError`: "The actor died because
its node has died. Node Id: ..."); a Ray Train trial carries the same line in its worker's error.
Ray's exception holds the node only in that message, so it is read from there and checked against
Ray's node table, which gives the node's address and why Ray marked it dead. A call in flight when
the node goes may fail first as `ActorUnavailableError` ("The actor ID is unavailable: ... Socket
closed"), before the node's death is known: then the actor's node is read from Ray's actor table
and counts as lost only if Ray lists that node dead, watched for `NODE_DEATH_WAIT_S` while it is
still listed alive (seen in the slow set: a lost trial recorded as a plain error), once an actor:
a later reader of the same error takes a dead verdict as it is, and looks once more, without
waiting, at a node that was alive.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

RAY_LOGS = "/tmp/ray/session_latest/logs"
"""Where a Ray started with its defaults keeps its logs; the path a sweep prints is the running
Ray's own (`ray_logs`: a cluster's session folder, on the node a trial ran on)."""
NODE_DIED = re.compile(r"its node has died\. Node Id: ([0-9a-f]{16,})")
"""Ray's words for an actor (a trial, or a Train worker) whose node died, with the node's id."""
ACTOR_UNAVAILABLE = re.compile(r"The actor ([0-9a-f]{32}) is unavailable")
"""Ray's words for an actor a call could not reach (`ActorUnavailableError`), with the actor's id."""

ERROR_FILE = "error.txt"
"""Tune's text of a trial's errors (`ray.tune.result.EXPR_ERROR_FILE`), in the trial's folder."""
FAILURE = "Failure # "
"""How Tune starts each failure it appends to that file."""


def lost_node(error: object) -> str | None:
    """The id of the node whose death ended a trial, from its error (an exception, or Tune's error
    text); None if the error says no node died."""
    if error is None:
        return None
    found = NODE_DIED.search(str(error))
    if found:
        return found.group(1)
    unreachable = ACTOR_UNAVAILABLE.search(str(error))
    return actor_dead_node(unreachable.group(1)) if unreachable else None


NODE_DEATH_WAIT_S = 20.0
"""Seconds an unreachable actor's node, while Ray still lists it alive, is watched for Ray to mark it
dead: the call fails the moment the node's socket closes, and Tune tells the searcher at once, before
Ray's health checks (every 3 s, dead after 5 misses: up to 15 s) have marked the node dead (the slow
set saw it twice: a lost trial read as an error by the searcher, where the runs table, read later,
said lost). Only an actor unavailable on a live node waits: a real loss seldom takes long, and an
actor unavailable for another reason (its process restarting, a network fault) costs this once."""


_WATCHED: dict[str, tuple[str, bool]] = {}
"""Each unreachable actor's node once watched (`actor_dead_node`), and whether Ray listed it dead by
then. The searcher, the final outcomes and the progress line each read the same trial's error: only
the first watches the node (up to `NODE_DEATH_WAIT_S`); a later reader takes a dead verdict as it is
and looks once more, without waiting, at a node that was alive (Ray may mark it dead after the
wait: the runs table, read last, then still says lost)."""


def actor_dead_node(actor: str, wait_s: float = NODE_DEATH_WAIT_S) -> str | None:
    """The node actor `actor` (its hex id) ran on, if Ray lists that node dead within `wait_s` seconds;
    None when no Ray runs here, Ray does not know the actor, or its node is still alive by then (an
    actor unavailable for another reason: its process restarting, a network fault). An actor asked
    about before is not watched again (`_WATCHED`)."""
    import ray

    if not ray.is_initialized():
        return None
    if actor in _WATCHED:
        node, dead = _WATCHED[actor]
        wait_s = 0.0  # watched once already: one more look at most
    else:
        # the GCS's actor table, which ray.util.state reads through the dashboard (a cluster may run none)
        from ray._private import state

        record = state.actors(actor_id=actor) or {}
        node, dead = (record.get("Address") or {}).get("NodeID"), False
        if not node:
            return None
    deadline = time.monotonic() + wait_s
    while not dead:
        dead = bool(dead_node(node))
        if dead or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    _WATCHED[actor] = node, dead
    return node if dead else None


def ray_session() -> Path | None:
    """The session folder of the Ray this process is attached to (`<temp dir>/<session>`); None
    when no Ray is running here."""
    import ray

    if not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    return Path(context.get_temp_dir()) / context.get_session_name()


def ray_logs() -> str:
    """The logs folder of the Ray this process is attached to (`<session>/logs`): a trial's own log
    is in this folder on the node it ran on (each node keeps its workers' logs under the cluster's
    session name). Ray's default path when no Ray is running here."""
    session = ray_session()
    return RAY_LOGS if session is None else str(session / "logs")


def dead_node(node: str) -> dict:
    """Ray's record of a dead node (`ray.nodes()`: its address, why it was marked dead), or {} when
    Ray is not running here or does not list it."""
    import ray

    if not ray.is_initialized():
        return {}
    return next((n for n in ray.nodes() if n.get("NodeID") == node and not n.get("Alive")), {})


@dataclass(frozen=True)
class NodeLoss:
    """A trial's node lost under it, as the runs table's `error` says it."""

    node: str
    """Ray's id of the node."""
    address: str | None
    """The node's IP, as Ray's node table lists it (None where the table was not read)."""
    reason: str | None
    """Why Ray marked the node dead (`health check failed ...`, a preemption), if it says."""
    at: datetime | None
    """When Tune recorded the trial's failure (its error file's time), in UTC."""
    epoch: int
    """The trial's last reported epoch (0 if it never reported)."""
    epochs: int
    """The epochs the trial was to run."""

    def __post_init__(self) -> None:
        if not self.node or self.epoch < 0 or self.epochs < 1:
            raise ValueError(f"bad node loss: {self}")
        if self.at is not None and self.at.tzinfo is None:
            raise ValueError(f"a node loss's time must be in UTC, not naive: {self.at}")

    def line(self, rerun: bool = True) -> str:
        """The runs table's `error`: `NodeLost: node ID (ADDRESS) lost at TIME UTC after epoch 2 of 8
        (REASON); the trial must be rerun: --resume`. `rerun`: whether `--resume` reruns it (not in
        an Optuna sweep: `reruns_errored`)."""
        where = f" ({self.address})" if self.address else ""
        when = f" at {self.at:%Y-%m-%d %H:%M:%S} UTC" if self.at else ""
        why = f" ({self.reason})" if self.reason else ""
        todo = "the trial must be rerun: --resume" if rerun else NOT_RERUN
        return f"NodeLost: node {self.node}{where} lost{when} after epoch {self.epoch} of {self.epochs}{why}; {todo}"


def reruns_errored(spec) -> bool:
    """Whether `--resume` reruns the trials of `spec` (a SweepSpec) that failed or were lost (Tune's
    `resume_errored`): a grid sweep's, from their last checkpoint; not an Optuna sweep's, whose study
    cannot reopen a trial told FAIL (`sweep._not_rerun` names them). The sweep, its progress lines and
    the runs table's lines all ask here."""
    return spec.mode != "optuna"


NOT_RERUN = ("--resume does not rerun it (an Optuna sweep: its study cannot reopen a trial told FAIL); run its "
             "values again in a new sweep")
"""What a failed or lost trial of an Optuna sweep needs, as its lines say it."""


def node_loss(error: object, epoch: int, epochs: int, at: datetime | None = None) -> NodeLoss | None:
    """The node loss a trial's `error` names, with what Ray's node table says of the node; None if
    the error is not a lost node."""
    node = lost_node(error)
    if node is None:
        return None
    record = dead_node(node)
    return NodeLoss(node, record.get("NodeManagerAddress"), record.get("DeathReasonMessage") or None, at,
                    epoch, epochs)


def error_file(folder: str | Path | None) -> tuple[str, datetime] | None:
    """The last error Tune wrote in a trial's folder, and its time (the file's, UTC); None if it
    wrote none. Tune appends each failure of a retried trial as `Failure # N (occurred at ...)`:
    the last one is the one that ended it."""
    if folder is None:
        return None
    path = Path(folder) / ERROR_FILE
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    if FAILURE in text:  # the last failure, without its `Failure # N (occurred at ...)` line
        text = text.rsplit(FAILURE, 1)[1].partition("\n")[2]
    return text.strip(), datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
