"""The state diagrams of spec/README.md, derived from the model and drawn as SVG.

Two diagrams, each a set of states and of labelled transitions, both found by running the model:

* **membership** (MEM-1, MEM-2): a broker id as the controller sees it, classified by
  ``model.membership.membership`` (unregistered, registered+fenced, registered+active, in controlled
  shutdown). The states and steps are those of the bounded exhaustive enumeration
  (:mod:`.exhaustive`): two broker ids, one partition on both, two incarnations each, from the warm
  and from the cold start, in each behaviour profile, every event of its alphabet from every state
  within :data:`MEMBERSHIP_DEPTH` events. A step is a transition of broker ``b`` when it changes
  ``b``'s membership or its registration's epoch (a new incarnation registering: a loop on
  registered+fenced). A failover is taken only from a state whose log is all committed: from any
  other it also drops the uncommitted records (LOG-10), which undoes whichever transition wrote
  them and would draw every arrow a second time, backwards.
* **broker** (MEM-3 to MEM-5): one broker's own state (``model.broker.BrokerState``), driven by the
  functions of ``model/broker.py`` against the model's controller, as a small breadth-first search
  of its own (:func:`broker_observations`): one broker id, up to two processes (incarnations), and
  the actions a process or its surroundings take: start, register, heartbeat, finish log recovery,
  SIGTERM, exit, crash, the session timeout passing, a failover. A request is a round trip: the
  controller handles it, commits everything, and the process reads the reply the commit released.

**Which rules label a transition.** Every model step lists the rules it cited (``StepResult.rules``;
the broker's own functions are run inside ``rules.collecting`` for theirs). The label of a
transition ``X -> Y`` made by events of one trigger (``heartbeat WantFence``, ``tick``, ...) is the
set of rules that

1. fired in *every* step making that transition by that trigger;
2. are not fired by every step of the same kind of event (heartbeat, whatever its flags; tick;
   register; ...) that starts in ``X`` and leaves the broker in ``X``: what such an event cites
   whatever happens is not what made the move (this takes ``LEASE-7``, contact, and ``LEASE-9``
   off an unfencing, since every heartbeat of a fenced broker cites them, and keeps ``LEASE-10``);
3. are rules of the files that define the states and their moves (``membership.md``, ``leases.md``,
   ``controlled-shutdown.md``), and neither a message format (a rule titled "The ... exchange",
   which every request of its kind cites) nor the replay of a record (titled "Replaying ...",
   which follows from the rule that wrote the record). What a move does to partitions and the log
   (PART-*, LOG-*) is left to those rules' own documents.

On the broker's diagram the rules the model/broker.py function that moved the process cites
(MEM-5) are added as they are: they are the broker's own rules, not the controller's answer.
Where a state's every event of a kind moves it (a heartbeat in STARTING always finds the broker
caught up here), nothing is there to contrast with, and the label keeps every rule of rule 3 that
took part (STARTING -> RECOVERY shows LEASE-7, LEASE-9, LEASE-11 and LAO-1).

A trigger whose transition exists in one profile only is marked with that profile's name.

**Drawing.** No graph-layout binary is needed: the states sit on an ellipse in the order their
enums define them (:func:`layout`), each arrow is a quadratic curve bent to its right so that the
two directions between a pair of states part, a loop is drawn outside the ellipse, and each label
sits on a white box beside its curve, on the side the curve bends to, at the first of a few points
along it (the middle first) where it covers no state and no label drawn before. Every state and arrow has an SVG ``<title>``, and
the drawing a ``<title>`` and ``<desc>`` of its own. The output is deterministic: the files are
committed, and tests/test_diagrams.py fails when regenerating them would change a byte.

    python -m kraftspec.conformance.diagrams            # list the transitions found
    python -m kraftspec.conformance.diagrams --check    # exit status 1 if spec/diagrams/ is stale
    python -m kraftspec.conformance.diagrams --write    # rewrite spec/diagrams/*.svg
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from uuid import UUID
from xml.sax.saxutils import escape

from attrs import frozen

from kraftspec.model import Commit, Config, Failover, Tick, initial_state, step
from kraftspec.model import broker as brokers
from kraftspec.model.broker import BrokerProcess, BrokerState
from kraftspec.model.membership import Membership, membership
from kraftspec.model.messages import BrokerHeartbeatResponse, BrokerRegistrationResponse, Request, Response
from kraftspec.model.rules import collecting
from kraftspec.model.state import ControllerState
from kraftspec.spec import rules as spec_rules
from kraftspec.spec.profiles import profile_names

from . import exhaustive
from .simulation import features_of

DIRECTORY = Path(__file__).resolve().parent.parent / "spec" / "diagrams"
COMMAND = "python -m kraftspec.conformance.diagrams --write"
MEMBERSHIP_DEPTH = 4
BROKER_DEPTH = 12
BROKER_PROCESSES = 2
STATE_FILES = ("membership.md", "leases.md", "controlled-shutdown.md")


@frozen
class Observation:
    """One step seen from one broker: where it was, where it went, what moved it, the rules fired."""

    source: str
    target: str
    trigger: str  # e.g. "heartbeat WantShutDown"
    kind: str  # the kind of event, e.g. "heartbeat"
    rules: frozenset[str]
    profile: str
    own: frozenset[str] = frozenset()  # the broker's own rules for the move (model/broker.py), not contrasted

    @property
    def moved(self) -> bool:
        return self.source != self.target or self.trigger == "register (new incarnation)"


@frozen
class Transition:
    """An arrow of a diagram: one trigger from ``source`` to ``target``, its rules, its profiles."""

    source: str
    target: str
    trigger: str
    rules: tuple[str, ...]
    profiles: tuple[str, ...]

    def label(self, all_profiles: tuple[str, ...]) -> str:
        only = "" if self.profiles == all_profiles else f" ({', '.join(self.profiles)})"
        return f"{', '.join(self.rules)}: {self.trigger}{only}"


@frozen
class Diagram:
    """States (value, caption) in drawing order and the transitions between them."""

    name: str
    title: str
    description: str
    states: tuple[tuple[str, str], ...]
    transitions: tuple[Transition, ...]
    profiles: tuple[str, ...]


# ---- which rules label a transition -------------------------------------------------------------


def _label_rules() -> set[str]:
    """Rule 3 of the module's docstring: the rules that may label a transition."""
    return {
        r.id
        for r in spec_rules().values()
        if r.file in STATE_FILES and not r.title.startswith("Replaying") and not r.title.endswith(" exchange")
    }


def _rule_order(rule_id: str) -> tuple[str, int]:
    area, number = rule_id.rsplit("-", 1)
    return area, int(number)


def transitions(observations: Iterable[Observation]) -> tuple[Transition, ...]:
    """The arrows the observations make, each labelled with the rules that made it (see the module)."""
    made: dict[tuple[str, str, str], dict[str, list[frozenset[str]]]] = defaultdict(lambda: defaultdict(list))
    still: dict[tuple[str, str, str], frozenset[str]] = {}  # (profile, source, kind) -> rules every such step fired
    kinds: dict[str, str] = {}
    own: dict[tuple[str, str, str], frozenset[str]] = defaultdict(frozenset)
    for o in observations:
        kinds[o.trigger] = o.kind
        if o.moved:
            made[(o.source, o.target, o.trigger)][o.profile].append(o.rules)
            own[(o.source, o.target, o.trigger)] |= o.own
        else:
            key = (o.profile, o.source, o.kind)
            still[key] = still[key] & o.rules if key in still else o.rules
    allowed = _label_rules()
    arrows = []
    for (source, target, trigger), by_profile in made.items():
        labels = set(own[(source, target, trigger)])
        for profile, fired in by_profile.items():
            every = frozenset.intersection(*fired)
            labels |= (every - still.get((profile, source, kinds[trigger]), frozenset())) & allowed
        profiles = tuple(p for p in profile_names() if p in by_profile)
        arrows.append(Transition(source, target, trigger, tuple(sorted(labels, key=_rule_order)), profiles))
    return tuple(sorted(arrows, key=lambda t: (t.source, t.target, t.trigger)))


# ---- (a) membership, from the exhaustive enumeration ----------------------------------------------


def _trigger(action: exhaustive.Action, state: ControllerState, broker_id: int) -> tuple[str, str]:
    """(trigger, kind) of an action of the exhaustive alphabet, as broker ``broker_id`` sees it."""
    kind = action[0]
    if kind == "heartbeat":
        _, _, fence, shut = action
        return "heartbeat" + (" WantFence" if fence else "") + (" WantShutDown" if shut else ""), kind
    if kind == "register":
        registration = state.image.brokers.get(broker_id)
        if registration is not None and action[1] == broker_id and registration.incarnation_id != exhaustive.incarnation(*action[1:]):
            return "register (new incarnation)", kind
    return kind, kind


def _member(state: ControllerState, broker_id: int) -> tuple[Membership, int | None]:
    registration = state.image.brokers.get(broker_id)
    return membership(state, broker_id), None if registration is None else registration.epoch


def membership_observations(depth: int = MEMBERSHIP_DEPTH) -> Iterator[Observation]:
    """Every step of the bounded enumerations, once per broker id (see the module's docstring)."""
    for profile in profile_names():
        for warm in (True, False):
            scope = exhaustive.Scope(brokers=2, partitions=1, generations=2, warm=warm, config=Config.for_profile(profile))
            exploration = exhaustive.frontier(scope, depth - 1, check=False)
            actions = exhaustive.alphabet(scope)
            for path in sorted(exploration.paths.values()):
                state = exhaustive.state_at(scope, path)
                for action in actions:
                    event = exhaustive.event_for(scope, state, action)
                    if event is None or (isinstance(event, Failover) and state.committed_offset != state.log_end_offset):
                        continue
                    result = step(state, event)
                    for b in range(scope.brokers):
                        (before, epoch), (after, new_epoch) = _member(state, b), _member(result.state, b)
                        trigger, kind = _trigger(action, state, b)
                        if trigger == "register (new incarnation)" and (action[1] != b or new_epoch == epoch):
                            trigger = "register"  # refused (REG-4, or another id's)
                        if kind in ("register", "heartbeat", "stale-heartbeat", "unregister") and action[1] != b:
                            trigger, kind = f"{kind} of another broker", f"{kind} of another broker"
                        yield Observation(before.value, after.value, trigger, kind, frozenset(result.rules), profile)


def membership_diagram(depth: int = MEMBERSHIP_DEPTH) -> Diagram:
    observations = list(membership_observations(depth))
    return Diagram(
        "membership",
        "Membership of a broker id, as the controller sees it (MEM-1, MEM-2)",
        "States are model.membership.Membership; arrows are the steps of a bounded exhaustive "
        "enumeration of the model that change a broker's membership or its epoch, labelled with the rules that made them.",
        tuple((m.value, m.value) for m in Membership),
        transitions(observations),
        profile_names(),
    )


# ---- (b) the broker's own states, against the model's controller -------------------------------------


@frozen
class World:
    """One broker process and the controller it talks to."""

    process: BrokerProcess
    controller: ControllerState
    processes: int  # how many processes this broker id has started


def _incarnation(n: int) -> UUID:
    return exhaustive.incarnation(0, n - 1)


def _round_trip(world: World, request: Request) -> tuple[ControllerState, Response | None, frozenset[str]]:
    """The controller handles ``request`` and commits; the reply the commit released, and the rules."""
    result = step(world.controller, request)
    fired = set(result.rules)
    replies = list(result.replies)
    state = result.state
    if state.committed_offset < state.log_end_offset:
        committed = step(state, Commit(state.log_end_offset))
        fired |= set(committed.rules)
        replies += committed.replies
        state = committed.state
    released: list[Response | None] = [r.response for r in replies if r.seq == result.seq]
    [response] = released or [None]
    return state, response, frozenset(fired)


def _broker_actions(world: World) -> Iterator[tuple[str, World, frozenset[str], frozenset[str]]]:
    """(action, next world, the controller's rules, the rules of the model/broker.py function that
    moved the process) for everything that can happen to the broker in ``world``."""
    process, state = world.process, world.controller
    config = state.config
    kind = process.state
    none: frozenset[str] = frozenset()
    if kind == BrokerState.NOT_RUNNING and world.processes < BROKER_PROCESSES:
        with collecting() as log:
            started = brokers.start(process, _incarnation(world.processes + 1))
        yield "start", World(started, state, world.processes + 1), none, frozenset(log.fired)
    if kind == BrokerState.STARTING and not process.registered:
        registration = brokers.registration_request(process, config.cluster_id, features_of(config))
        controller, response, fired = _round_trip(world, registration)
        with collecting() as log:
            registered = brokers.on_registration_response(process, response) if isinstance(response, BrokerRegistrationResponse) else process
        yield "register", World(registered, controller, world.processes), fired, frozenset(log.fired)
    if process.sends_heartbeats:
        caught_up = brokers.catch_up(process, state.committed_offset)
        heartbeat = brokers.heartbeat_request(caught_up, offset_unit=config.params.heartbeat_offset)
        controller, response, fired = _round_trip(world, heartbeat)
        with collecting() as log:
            after = brokers.on_heartbeat_response(caught_up, response) if isinstance(response, BrokerHeartbeatResponse) else caught_up
        yield "heartbeat", World(after, controller, world.processes), fired, frozenset(log.fired)
    if kind == BrokerState.RECOVERY and not process.log_recovery_done:
        with collecting() as log:
            recovered = brokers.finish_log_recovery(process)
        yield "finish log recovery", World(recovered, state, world.processes), none, frozenset(log.fired)
    if kind in (BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING):
        with collecting() as log:
            asked = brokers.sigterm(process)
        yield "SIGTERM", World(asked, state, world.processes), none, frozenset(log.fired)
    if kind == BrokerState.SHUTTING_DOWN:
        with collecting() as log:
            stopped = brokers.stop(process)
        yield "exit", World(stopped, state, world.processes), none, frozenset(log.fired)
    if kind != BrokerState.NOT_RUNNING:
        with collecting() as log:
            stopped = brokers.stop(process)
        yield "crash", World(stopped, state, world.processes), none, frozenset(log.fired)
    for event, name in ((Tick(state.now_ms + config.session_timeout_ms), "session timeout passes"), (Failover(), "failover")):
        result = step(state, event)
        yield name, World(process, result.state, world.processes), frozenset(result.rules), none


def _world_key(world: World) -> tuple:
    p = world.process
    return (p.state, p.incarnation_id, p.epoch, p.next_offset, p.log_recovery_done, world.processes, exhaustive.state_key(world.controller))


def broker_observations(depth: int = BROKER_DEPTH) -> Iterator[Observation]:
    """Every action from every world within ``depth`` actions of a broker that has not started, in
    each profile: a breadth-first search, worlds merged by the exhaustive enumeration's key."""
    for profile in profile_names():
        config = Config.for_profile(profile)
        root = World(BrokerProcess(0), initial_state(config), 0)
        seen = {_world_key(root)}
        level = [root]
        for _ in range(depth):
            fresh = []
            for world in level:
                for action, after, fired, own in _broker_actions(world):
                    before_state, after_state = world.process.state.name, after.process.state.name
                    yield Observation(before_state, after_state, action, action, fired, profile, own if after_state != before_state else frozenset())
                    key = _world_key(after)
                    if key not in seen:
                        seen.add(key)
                        fresh.append(after)
            level = fresh


def broker_diagram(depth: int = BROKER_DEPTH) -> Diagram:
    observations = list(broker_observations(depth))
    return Diagram(
        "broker",
        "The broker's own states (MEM-3 to MEM-5)",
        "States are model.broker.BrokerState; arrows are the actions of a bounded search of one broker's "
        "processes against the model's controller that change its state, labelled with the rules that made them.",
        tuple((s.name, s.name) for s in BrokerState),
        transitions(observations),
        profile_names(),
    )


# ---- drawing -------------------------------------------------------------------------------------------

CHAR = 6.6  # the width of a character at the label size, roughly, for sizing boxes
LINE = 14  # the height of a label line
NODE_HEIGHT = 38


@frozen
class Arrow:
    """What is drawn between two states: every transition from ``source`` to ``target``, a line each."""

    source: str
    target: str
    lines: tuple[str, ...]


def arrows(diagram: Diagram) -> tuple[Arrow, ...]:
    """One arrow per pair of states; triggers with the same rules and profiles share a line."""
    lines: dict[tuple[str, str], dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]]] = defaultdict(lambda: defaultdict(list))
    for t in diagram.transitions:
        lines[(t.source, t.target)][(t.rules, t.profiles)].append(t.trigger)
    drawn = []
    for (source, target), by_rules in sorted(lines.items()):
        texts = []
        for (rules, profiles), triggers in sorted(by_rules.items()):
            only = "" if profiles == diagram.profiles else f" ({', '.join(profiles)})"
            texts.append(f"{', '.join(rules)}: {' / '.join(triggers)}{only}")
        drawn.append(Arrow(source, target, tuple(texts)))
    return tuple(drawn)


def layout(diagram: Diagram) -> dict[str, tuple[float, float]]:
    """Each state's centre: the states on an ellipse around (0, 0), in order, the first at the top
    left, clockwise."""
    count = len(diagram.states)
    rx, ry = 200 + 60 * count, 120 + 40 * count
    centres = {}
    for i, (value, _) in enumerate(diagram.states):
        angle = math.pi * (1.25 + 2 * i / count)
        centres[value] = (round(rx * math.cos(angle), 1), round(ry * math.sin(angle), 1))
    return centres


Box = tuple[float, float, float, float]  # left, top, right, bottom


def _overlap(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _label_size(lines: tuple[str, ...]) -> tuple[float, float]:
    return max(len(line) for line in lines) * CHAR + 10, len(lines) * LINE + 4


def _beside(point: tuple[float, float], normal: tuple[float, float], size: tuple[float, float]) -> Box:
    """The box of ``size`` that touches ``point`` from the side ``normal`` points to."""
    (x, y), (nx, ny), (w, h) = point, normal, size
    reach = abs(nx) * w / 2 + abs(ny) * h / 2 + 4
    cx, cy = x + nx * reach, y + ny * reach
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2


def _text_lines(lines: Iterable[str], x: float, y: float) -> str:
    lines = list(lines)
    top = y - (len(lines) - 1) * LINE / 2
    return "".join(
        f'<text x="{x:.1f}" y="{top + n * LINE:.1f}" text-anchor="middle" dominant-baseline="central">{escape(line)}</text>'
        for n, line in enumerate(lines)
    )


def _node_size(caption: str) -> tuple[float, float]:
    return len(caption) * 8.2 + 28, NODE_HEIGHT


def _clip(centre: tuple[float, float], size: tuple[float, float], towards: tuple[float, float]) -> tuple[float, float]:
    """Where the line from a box's centre towards a point leaves the box (with a small margin)."""
    (x, y), (w, h), (tx, ty) = centre, size, towards
    dx, dy = tx - x, ty - y
    scale = min((w / 2 + 4) / abs(dx) if dx else math.inf, (h / 2 + 4) / abs(dy) if dy else math.inf)
    return x + dx * scale, y + dy * scale


def _curve(diagram: Diagram, arrow: Arrow, centres, sizes):
    """The path of an arrow, and the points on it (with the side facing away) where its label may go."""
    (sx, sy), (tx, ty) = centres[arrow.source], centres[arrow.target]
    if arrow.source == arrow.target:  # a loop, outside the ellipse
        norm = math.hypot(sx, sy) or 1.0
        ux, uy = sx / norm, sy / norm
        px, py = -uy, ux
        w, h = sizes[arrow.source]
        reach = abs(ux) * w / 2 + abs(uy) * h / 2
        start = _clip((sx, sy), (w, h), (sx + ux * reach + px * 24, sy + uy * reach + py * 24))
        end = _clip((sx, sy), (w, h), (sx + ux * reach - px * 24, sy + uy * reach - py * 24))
        c1 = (sx + ux * (reach + 80) + px * 70, sy + uy * (reach + 80) + py * 70)
        c2 = (sx + ux * (reach + 80) - px * 70, sy + uy * (reach + 80) - py * 70)
        d = f"M{start[0]:.1f},{start[1]:.1f} C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} {end[0]:.1f},{end[1]:.1f}"
        top = (sx + ux * (reach + 60), sy + uy * (reach + 60))
        side = (0.0, math.copysign(1.0, uy)) if abs(uy) >= abs(ux) / 2 else (math.copysign(1.0, ux), 0.0)
        return d, [c1, c2, start, end], [(top, side)]
    dx, dy = tx - sx, ty - sy
    length = math.hypot(dx, dy)
    nx, ny = -dy / length, dx / length  # the right of the direction of travel, on screen
    bend = 0.18 * length
    mx, my = (sx + tx) / 2 + nx * bend, (sy + ty) / 2 + ny * bend
    start = _clip((sx, sy), sizes[arrow.source], (mx, my))
    end = _clip((tx, ty), sizes[arrow.target], (mx, my))
    d = f"M{start[0]:.1f},{start[1]:.1f} Q{mx:.1f},{my:.1f} {end[0]:.1f},{end[1]:.1f}"
    spots = []
    for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78):
        point = (
            (1 - t) ** 2 * start[0] + 2 * t * (1 - t) * mx + t * t * end[0],
            (1 - t) ** 2 * start[1] + 2 * t * (1 - t) * my + t * t * end[1],
        )
        spots.append((point, (nx, ny)))
    return d, [start, (mx, my), end], spots


def svg(diagram: Diagram) -> str:
    """The diagram as a standalone SVG document."""
    centres = layout(diagram)
    captions = dict(diagram.states)
    sizes = {value: _node_size(caption) for value, caption in diagram.states}
    taken: list[Box] = [(x - sizes[v][0] / 2, y - sizes[v][1] / 2, x + sizes[v][0] / 2, y + sizes[v][1] / 2) for v, (x, y) in centres.items()]
    extent = list(taken)
    paths, labels = [], []
    drawn = arrows(diagram)
    curves = [_curve(diagram, arrow, centres, sizes) for arrow in drawn]
    lines = [(n, point) for n, (_, _, spots) in enumerate(curves) for point, _ in spots]
    for n, (arrow, (d, points, spots)) in enumerate(zip(drawn, curves, strict=True)):
        name = f"{captions[arrow.source]} to {captions[arrow.target]}: " + "; ".join(arrow.lines)
        size = _label_size(arrow.lines)
        # the first spot whose label covers no state, label or other arrow, or else the one that covers least

        def covers(box: Box, n: int = n) -> float:
            crossed = sum(1 for m, (x, y) in lines if m != n and box[0] <= x <= box[2] and box[1] <= y <= box[3])
            return sum(_overlap(box, t) for t in taken) + 400 * crossed

        candidates = [_beside(point, normal, size) for point, normal in spots]
        covered = [covers(box) for box in candidates]
        box = candidates[next((n for n, c in enumerate(covered) if c == 0), covered.index(min(covered)))]
        taken.append(box)
        extent += [box, *((x, y, x, y) for x, y in points)]
        lx, ly = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        paths.append(f'<g class="arrow"><title>{escape(name)}</title><path d="{d}" marker-end="url(#head)"/></g>')
        labels.append(
            f'<g class="arrow-label"><title>{escape(name)}</title>'
            f'<rect class="label" x="{box[0]:.1f}" y="{box[1]:.1f}" width="{size[0]:.1f}" height="{size[1]:.1f}" rx="3"/>'
            + _text_lines(arrow.lines, lx, ly)
            + "</g>"
        )
    margin = 16
    left, top = min(b[0] for b in extent) - margin, min(b[1] for b in extent) - margin
    width, height = max(b[2] for b in extent) + margin - left, max(b[3] for b in extent) + margin - top
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="{left:.0f} {top:.0f} {width:.0f} {height:.0f}" role="img" aria-labelledby="{diagram.name}-title {diagram.name}-desc">',
        f'<title id="{diagram.name}-title">{escape(diagram.title)}</title>',
        f'<desc id="{diagram.name}-desc">{escape(diagram.description)} Generated by {escape(COMMAND)}; do not edit by hand.</desc>',
        "<style>"
        "text{font-family:'DejaVu Sans',Verdana,sans-serif;font-size:11px;fill:#111}"
        ".state rect{fill:#eef3fb;stroke:#1f3b73;stroke-width:1.5}.state text{font-size:13px;font-weight:bold}"
        ".arrow path{fill:none;stroke:#444;stroke-width:1.2}.label{fill:#fff;fill-opacity:0.92;stroke:#bbb;stroke-width:0.5}"
        "</style>",
        '<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>',
        f'<rect x="{left:.0f}" y="{top:.0f}" width="{width:.0f}" height="{height:.0f}" fill="#fff"/>',
        *paths,
    ]
    for value, caption in diagram.states:
        (x, y), (w, h) = centres[value], sizes[value]
        out.append(
            f'<g class="state"><title>state {escape(caption)}</title>'
            f'<rect x="{x - w / 2:.1f}" y="{y - h / 2:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8"/>'
            + _text_lines([caption], x, y)
            + "</g>"
        )
    out += labels
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- the command ---------------------------------------------------------------------------------------


def diagrams() -> tuple[Diagram, ...]:
    return membership_diagram(), broker_diagram()


def files() -> dict[str, str]:
    """The generated files, by name: ``<diagram>.svg``."""
    return {f"{d.name}.svg": svg(d) for d in diagrams()}


def write(directory: Path = DIRECTORY, texts: dict[str, str] | None = None) -> list[Path]:
    """Write the generated files (``texts``, or :func:`files` now) into ``directory``; the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (files() if texts is None else texts).items():
        (directory / name).write_bytes(text.encode("utf-8"))
        written.append(directory / name)
    return written


def stale(directory: Path = DIRECTORY, texts: dict[str, str] | None = None) -> list[str]:
    """The files of ``directory`` that differ from what the model generates now (or are missing)."""
    return [
        name for name, text in (files() if texts is None else texts).items()
        if not (directory / name).exists() or (directory / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.diagrams",
        description="Derive the membership and broker state diagrams from the model; list them, check spec/diagrams/, or rewrite it.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite the SVG files in {DIRECTORY}")
    action.add_argument("--check", action="store_true", help=f"exit with status 1 if {DIRECTORY} is not what the model gives")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path}")
        return 0
    if args.check:
        found = stale()
        if found:
            print(f"stale in {DIRECTORY}: {', '.join(found)}; run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    for diagram in diagrams():
        print(f"{diagram.title}:")
        for t in diagram.transitions:
            print(f"  {t.source} -> {t.target}: {t.label(diagram.profiles)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
