"""Pictures of a topology: SVG, PNG and a self-contained HTML page (``kspark describe --format``).

What is drawn comes from the model, not from parsing text: the sub-topologies,
nodes and edges of ``topology.describe()`` (the :class:`TopologyDescription`
objects Kafka Streams' layout is printed from), and from the topology's
builder what the description does not carry: which topics are repartition
topics, which stores have changelog topics, what kind each store is. With a
:class:`~kspark.runtime.spark.plan.PhysicalPlan` each sub-topology is marked
with what the Spark runner does with it, in the words ``kspark describe
--spark`` prints: *native* (lowered to Spark's own aggregation), *fused* (a
stateless chain run as one closure per operator) or *engine* (kspark's
engine runs the Kafka Streams tasks).

A sub-topology is a box: on its left a panel with its number, stage and the
plan's decisions; on its right its processors laid out top to bottom, sources
first and sinks last, with its stores (and their changelog topics) beside the
processors that use them. Topics are nodes between the boxes, so a repartition
topic sits between the sub-topology that writes it and the one that reads it.
The layout is :mod:`kspark.tools.layout`'s; text is monospace, so its width is
known without a font (0.6 em a character) and nothing overlaps in any
renderer. PNG is the SVG rasterised by resvg (the ``resvg-py`` wheel), which
needs a monospace font on the machine (DejaVu Sans Mono, Menlo, Consolas...).
"""

from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kspark.processor.internals.describe import (
    GlobalStoreDescription,
    NodeDescription,
    ProcessorDescription,
    SinkDescription,
    SourceDescription,
    SubtopologyDescription,
)
from kspark.processor.topology import Topology
from kspark.state.internals.builders import KeyValueStoreBuilder, SessionStoreBuilder, WindowStoreBuilder
from kspark.tools.layout import Layout, LayoutNode, layered_layout, packed_layout

if TYPE_CHECKING:
    from kspark.runtime.spark.plan import PhysicalPlan, SubtopologyPlan

__all__ = ["Format", "FORMATS", "topology_svg", "topology_png", "topology_html", "render"]

Format = Literal["svg", "png", "html"]
FORMATS: tuple[Format, ...] = ("svg", "png", "html")

FONT = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', 'Courier New', monospace"
_EM = 0.6021  # a monospace glyph's advance in em (DejaVu Sans Mono 1233/2048; Menlo, Consolas 0.60)
_NAME_SIZE, _CAPTION_SIZE, _PANEL_SIZE, _TITLE_SIZE = 12.0, 10.0, 10.0, 13.0
_NAME_CHARS = 36  # longer node names are wrapped at hyphens
_PANEL_CHARS = 34  # characters a line of a sub-topology's side panel holds
_PANEL_WIDTH = _PANEL_CHARS * _PANEL_SIZE * _EM + 20
_PAD = 16.0  # inside a sub-topology's box

Kind = Literal["source", "processor", "sink", "store", "topic", "repartition", "changelog"]
Category = Literal["native", "fused", "engine"]

# kind -> (fill, stroke, dash pattern, caption)
_STYLE: dict[Kind, tuple[str, str, str, str]] = {
    "source": ("#ffffff", "#2d3748", "", "source"),
    "processor": ("#ffffff", "#2d3748", "", "processor"),
    "sink": ("#ffffff", "#2d3748", "", "sink"),
    "store": ("#fffbea", "#b7791f", "", "state store"),
    "topic": ("#e8f1fb", "#2b6cb0", "", "topic"),
    "repartition": ("#fff1e0", "#c05621", "6 3", "repartition topic"),
    "changelog": ("#fdf0f7", "#b83280", "2 3", "changelog topic"),
}
# category -> (colour, light background, what it means)
_STAGE: dict[Category, tuple[str, str, str]] = {
    "native": ("#276749", "#f0fff4", "lowered to Spark's own aggregation"),
    "fused": ("#6b46c1", "#faf5ff", "stateless chain, one closure per operator"),
    "engine": ("#4a5568", "#f7fafc", "kspark's engine runs the Kafka Streams tasks"),
}
_PLAIN = ("#718096", "#fbfbfc")  # a box without a plan, and global stores
_EDGE, _STORE_EDGE = "#4a5568", "#b7791f"


def text_width(text: str, size: float) -> float:
    """The width of ``text`` in the picture's monospace font at ``size`` px."""
    return len(text) * size * _EM


# ---------------------------------------------------------------------------------------- the model


@dataclass
class _Node:
    key: str
    kind: Kind
    name: str
    caption: str
    lines: list[str]
    width: float = 0.0
    height: float = 0.0

    def __post_init__(self) -> None:
        text = max(
            *(text_width(line, _NAME_SIZE) for line in self.lines), text_width(self.caption, _CAPTION_SIZE)
        )
        # room for the shape's own ends: a stadium's round ends, a parallelogram's slant
        extra = {"source": 16.0, "topic": 20.0, "repartition": 20.0, "changelog": 20.0, "sink": 10.0}
        self.width = text + 24 + extra.get(self.kind, 0.0)
        self.height = 12 + 12 + 15 * len(self.lines) + (8 if self.kind == "store" else 0)


@dataclass
class _Stage:
    category: Category
    summary: str  # the plan's words: "native windowed count, fused"
    notes: list[str]  # the query it runs in, and the plan's decisions


@dataclass
class _Box:
    """A sub-topology (or a global store) with its own layout inside."""

    key: str
    title: str
    stage: _Stage | None
    notes: list[str]
    described: list[NodeDescription]  # its sources, processors and sinks as describe() has them
    nodes: dict[str, _Node]
    edges: list[tuple[str, str, str]]  # tail, head, "flow" | "store" | "changelog"
    layout: Layout = field(init=False)
    width: float = 0.0
    height: float = 0.0
    panel_lines: list[str] = field(default_factory=list)
    panel_width: float = _PANEL_WIDTH

    def __post_init__(self) -> None:
        sinks = {k for k, n in self.nodes.items() if n.kind == "sink"}
        sizes = {k: (n.width, n.height) for k, n in self.nodes.items()}
        # A store hangs beside the processors that use it: its edges bend, the records' run straight.
        weights = {i: 0.2 for i, (_, _, kind) in enumerate(self.edges) if kind != "flow"}
        self.layout = layered_layout(
            sizes,
            [(t, h) for t, h, _ in self.edges],
            weights=weights,
            bottom=sinks,
            node_gap=22,
            layer_gap=30,
        )
        wrap = textwrap.TextWrapper(width=_PANEL_CHARS, break_on_hyphens=False)
        self.panel_lines = [line for note in self.notes for line in wrap.wrap(note)]
        panel_height = 10 + 18 + (22 if self.stage else 0) + 13 * len(self.panel_lines) + 10
        # The panel holds its notes; a long stage line ("NATIVE native windowed count, fused") widens it.
        stage = (
            0.0
            if self.stage is None
            else _badge_width(self.stage.category) + text_width(self.stage.summary, 10)
        )
        self.panel_width = max(_PANEL_WIDTH, 16 + stage + 10, 10 + text_width(self.title, _TITLE_SIZE) + 10)
        self.width = self.panel_width + _PAD + self.layout.width + _PAD
        self.height = max(self.layout.height + 2 * _PAD, panel_height)

    def inner(self, key: str) -> LayoutNode:
        return self.layout.nodes[key]

    @property
    def inner_left(self) -> float:
        return self.panel_width + _PAD

    @property
    def inner_top(self) -> float:
        return (self.height - self.layout.height) / 2


def _badge_width(category: Category) -> float:
    return text_width(category.upper(), 10) + 12


def _wrap_name(name: str) -> list[str]:
    """A long processor name on several lines, broken after hyphens."""
    if len(name) <= _NAME_CHARS:
        return [name]
    lines: list[str] = []
    for part in re.findall(r"[^-]*-|[^-]+$", name):
        if lines and len(lines[-1]) + len(part) <= _NAME_CHARS:
            lines[-1] += part
        else:
            lines.extend(textwrap.wrap(part, _NAME_CHARS) or [part])
    return lines


def _category(sub: SubtopologyPlan) -> Category:
    if sub.lowered:
        return "native"
    return "fused" if sub.fused else "engine"


def _stage(plan: PhysicalPlan, subtopology: int) -> _Stage | None:
    if not any(s.subtopology == subtopology for s in plan.subtopologies):
        return None
    sub = plan.subtopology(subtopology)
    query = plan.query_of(subtopology)
    tasks = "" if sub.tasks is None else f", {sub.tasks} tasks"
    notes = [f"Spark query {query.name}, level {query.level}{tasks}"]
    notes += [str(d) for d in sub.decisions]
    return _Stage(_category(sub), sub.summary().partition(": ")[2], notes)


class _Facts:
    """What the picture needs from the topology beyond its description."""

    def __init__(self, topology: Topology) -> None:
        builder = topology.internal_builder
        self.description = topology.describe()
        self.internal = {name: p.kind for name, p in builder.internal_topics().items()}
        self.global_stores = set(builder.global_store_names())
        reused = builder.source_changelog_topics()
        self.changelog: dict[str, str] = {}
        self.store_kind: dict[str, str] = {}
        for store in builder.state_store_names():
            store_builder = builder.store_builder(store)
            logging = getattr(store_builder, "logging_enabled", None)
            # A source KTable may use its own topic as its changelog: no topic of its own then.
            if callable(logging) and logging() and store not in reused:
                self.changelog[store] = f"{store}-changelog"
            self.store_kind[store] = (
                "window store"
                if isinstance(store_builder, WindowStoreBuilder)
                else "session store"
                if isinstance(store_builder, SessionStoreBuilder)
                else "key-value store"
                if isinstance(store_builder, KeyValueStoreBuilder)
                else "state store"
            )

    def topic_kind(self, topic: str) -> Kind:
        kind = self.internal.get(topic)
        return "repartition" if kind == "repartition" else "changelog" if kind == "changelog" else "topic"


def _node(key: str, kind: Kind, name: str, caption: str | None = None) -> _Node:
    return _Node(key, kind, name, caption or _STYLE[kind][3], _wrap_name(name))


def _sub_box(sub: SubtopologyDescription, facts: _Facts, stage: _Stage | None) -> _Box:
    nodes: dict[str, _Node] = {}
    edges: list[tuple[str, str, str]] = []
    for n in sub.nodes:
        if isinstance(n, SourceDescription):
            nodes[f"n:{n.name}"] = _node(f"n:{n.name}", "source", n.name)
        elif isinstance(n, SinkDescription):
            caption = "sink" if n.topic is not None else "sink, topic per record"
            nodes[f"n:{n.name}"] = _node(f"n:{n.name}", "sink", n.name, caption)
        else:
            nodes[f"n:{n.name}"] = _node(f"n:{n.name}", "processor", n.name)
    for n in sub.nodes:
        edges += [(f"n:{n.name}", f"n:{s.name}", "flow") for s in n.successors]
        if isinstance(n, ProcessorDescription):
            for store in n.stores:
                if store in facts.global_stores:
                    continue  # drawn with its global store's box
                if f"s:{store}" not in nodes:
                    nodes[f"s:{store}"] = _node(f"s:{store}", "store", store, facts.store_kind.get(store))
                    if store in facts.changelog:
                        topic = facts.changelog[store]
                        nodes[f"c:{topic}"] = _node(f"c:{topic}", "changelog", topic)
                        edges.append((f"s:{store}", f"c:{topic}", "changelog"))
                edges.append((f"n:{n.name}", f"s:{store}", "store"))
    notes = stage.notes if stage else []
    return _Box(f"sub:{sub.id}", f"Sub-topology {sub.id}", stage, notes, list(sub.nodes), nodes, edges)


def _global_box(g: GlobalStoreDescription, on_spark: bool) -> _Box:
    source, processor, store = g.source, g.processor, g.store_name
    nodes = {
        f"n:{source.name}": _node(f"n:{source.name}", "source", source.name),
        f"n:{processor.name}": _node(f"n:{processor.name}", "processor", processor.name),
        f"s:{store}": _node(f"s:{store}", "store", store, "global store"),
    }
    edges = [
        (f"n:{source.name}", f"n:{processor.name}", "flow"),
        (f"n:{processor.name}", f"s:{store}", "store"),
    ]
    notes = [f"sub-topology {g.id}: no tasks, a copy in every instance; its topic is its changelog"]
    if on_spark:
        notes.append("on Spark: replicated whole into every Python worker")
    return _Box(f"global:{g.id}", "Global store", None, notes, [source, processor], nodes, edges)


# ---------------------------------------------------------------------------------------- drawing


@dataclass
class _Placed:
    """A node where it is drawn: top-left corner and size."""

    node: _Node
    x: float
    y: float

    @property
    def cx(self) -> float:
        return self.x + self.node.width / 2


def _curve(points: Sequence[tuple[float, float]], straight: Collection[int] = ()) -> str:
    """A smooth path through ``points``, vertical where it leaves and enters each one; the
    segments numbered in ``straight`` (from ``points[i]``) are straight lines."""
    (x0, y0), rest = points[0], points[1:]
    out = [f"M{x0:.1f},{y0:.1f}"]
    for i, (x, y) in enumerate(rest):
        k = (y - y0) / 2
        if i in straight:
            out.append(f"L{x:.1f},{y:.1f}")
        else:
            out.append(f"C{x0:.1f},{y0 + k:.1f} {x:.1f},{y - k:.1f} {x:.1f},{y:.1f}")
        x0, y0 = x, y
    return " ".join(out)


Bounds = tuple[float, float, float, float]  # left, top, right, bottom


def _topic_edge(
    points: list[tuple[float, float]], node: _Placed, box: Bounds, topic: Bounds, sink: bool
) -> tuple[list[tuple[float, float]], set[int]]:
    """The route of an edge between a topic and a source or sink inside ``box``: the layout's
    route to the box's edge, then straight to the node. An edge against the flow (a topology that
    reads a topic it writes) reaches the box from the wrong side: it goes round the box's right
    side instead of through its nodes, and meets the topic at its side, apart from the edges that
    meet it where records flow. Returns the points and which segments are straight."""
    _, top, right, bottom = box
    lane, gap = max(right, topic[2]) + 16, 16.0
    middle = (topic[1] + topic[3]) / 2
    side = topic[2] - 5  # the parallelogram's slanted side, halfway down
    if sink:
        start = (node.cx, node.y + node.node.height)
        if points[-1][1] > points[0][1]:  # downwards, as records flow
            return [start, *points], set()
        around = [start, (node.cx, bottom + gap), (lane, bottom + gap)]
        if len(points) == 2:  # the topic is right above the box
            return [*around, (lane, middle), (side, middle)], {0, 1, 2, 3}
        return [*around, (lane, top - gap), *points[1:]], {0, 1, 2}
    end = (node.cx, node.y)
    if points[-1][1] > points[0][1]:
        return [*points, end], set()
    into = [(lane, top - gap), (node.cx, top - gap), end]
    if len(points) == 2:  # the topic is right below the box
        return [(side, middle), (lane, middle), *into], {0, 1, 2, 3}
    n = len(points) - 1
    return [*points[:-1], (lane, bottom + gap), *into], {n, n + 1, n + 2}


def _attrs(**attrs: object) -> str:
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{html.escape(str(v))}"' for k, v in attrs.items())


def _text(x: float, y: float, text: str, size: float, **attrs: object) -> str:
    return f"<text{_attrs(x=f'{x:.1f}', y=f'{y:.1f}', font_size=size, **attrs)}>{html.escape(text)}</text>"


def _rect(x: float, y: float, w: float, h: float, rx: float, **attrs: object) -> str:
    size = _attrs(x=f"{x:.1f}", y=f"{y:.1f}", width=f"{w:.1f}", height=f"{h:.1f}", rx=f"{rx:.1f}")
    return f"<rect{size}{_attrs(**attrs)}/>"


def _polygon(points: Iterable[tuple[float, float]], **attrs: object) -> str:
    return f'<polygon points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in points)}"{_attrs(**attrs)}/>'


def _shape(kind: Kind, x: float, y: float, w: float, h: float) -> str:
    fill, stroke, dash, _ = _STYLE[kind]
    style: dict[str, object] = {"fill": fill, "stroke": stroke, "stroke_width": 1.4}
    if dash:
        style["stroke_dasharray"] = dash
    x1, y1 = x + w, y + h
    if kind == "source":  # a stadium
        return _rect(x, y, w, h, h / 2, **style)
    if kind == "processor":
        return _rect(x, y, w, h, 3, **style)
    if kind == "sink":  # corners cut off
        c = 8.0
        corners = [(x + c, y), (x1 - c, y), (x1, y + c), (x1, y1 - c), (x1 - c, y1), (x + c, y1)]
        return _polygon([*corners, (x, y1 - c), (x, y + c)], **style)
    if kind == "store":  # a cylinder: its body, then the front of its lid
        e = 5.0
        r = f"{w / 2:.1f},{e:.1f} 0 0,1"
        body = f"M{x:.1f},{y + e:.1f} A{r} {x1:.1f},{y + e:.1f} V{y1 - e:.1f} A{r} {x:.1f},{y1 - e:.1f} Z"
        rim = f"M{x:.1f},{y + e:.1f} A{w / 2:.1f},{e:.1f} 0 0,0 {x1:.1f},{y + e:.1f}"
        lid = _attrs(d=rim, fill="none", stroke=stroke, stroke_width=1.4)
        return f"<path{_attrs(d=body, **style)}/><path{lid}/>"
    s = 10.0  # topics: a parallelogram, the log leaning forward
    return _polygon([(x + s, y), (x1, y), (x1 - s, y1), (x, y1)], **style)


def _draw_node(p: _Placed, out: list[str]) -> None:
    n = p.node
    out.append(f"<g{_attrs(class_=f'node {n.kind}', data_kind=n.kind, data_name=n.name)}>")
    out.append(f"<title>{html.escape(f'{n.caption}: {n.name}')}</title>")
    out.append(_shape(n.kind, p.x, p.y, n.width, n.height))
    top = p.y + 6 + (8 if n.kind == "store" else 0)
    out.append(_text(p.cx, top + 10, n.caption, _CAPTION_SIZE, fill="#718096", text_anchor="middle"))
    for i, line in enumerate(n.lines):
        out.append(
            _text(p.cx, top + 12 + 15 * (i + 1) - 2, line, _NAME_SIZE, fill="#1a202c", text_anchor="middle")
        )
    out.append("</g>")


def _edge_path(points: Sequence[tuple[float, float]], kind: str, straight: Collection[int] = ()) -> str:
    if kind == "store":  # a processor reads and writes its store: no direction
        style = _attrs(stroke=_STORE_EDGE, stroke_dasharray="5 3")
    elif kind == "changelog":
        style = _attrs(
            stroke=_STYLE["changelog"][1], stroke_dasharray="2 3", marker_end="url(#arrow-changelog)"
        )
    else:
        style = _attrs(stroke=_EDGE, marker_end="url(#arrow)")
    return f'<path class="edge {kind}" d="{_curve(points, straight)}" fill="none" stroke-width="1.3"{style}/>'


def _draw_box(box: _Box, x: float, y: float, out: list[str]) -> dict[str, _Placed]:
    colour, background = (_STAGE[box.stage.category][:2]) if box.stage else _PLAIN
    dashed = {} if box.stage or box.key.startswith("sub:") else {"stroke_dasharray": "6 4"}
    data = {"data_stage": box.stage.category, "data_summary": box.stage.summary} if box.stage else {}
    kind = "subtopology" if box.key.startswith("sub:") else "global-store"
    classes = f"{kind} {box.stage.category}" if box.stage else kind
    out.append(f"<g{_attrs(class_=classes, id=box.key.replace(':', '-'), **data)}>")
    out.append(
        _rect(x, y, box.width, box.height, 8, fill=background, stroke=colour, stroke_width=2, **dashed)
    )
    rule = f"M{x + box.panel_width:.1f},{y + 10:.1f} V{y + box.height - 10:.1f}"
    out.append(f"<path{_attrs(d=rule, stroke=colour, stroke_opacity=0.35)}/>")
    ty = y + 22
    out.append(_text(x + 10, ty, box.title, _TITLE_SIZE, font_weight="bold", fill="#1a202c"))
    if box.stage:
        label = box.stage.category.upper()
        w = _badge_width(box.stage.category)
        out.append(_rect(x + 10, ty + 8, w, 16, 3, fill=colour))
        out.append(_text(x + 16, ty + 20, label, 10, font_weight="bold", fill="#ffffff"))
        out.append(_text(x + 16 + w, ty + 20, box.stage.summary, 10, fill="#1a202c"))
        ty += 22
    for i, line in enumerate(box.panel_lines):
        out.append(_text(x + 10, ty + 17 + 13 * i, line, _PANEL_SIZE, fill="#4a5568"))
    left, top = x + box.inner_left, y + box.inner_top
    placed = {
        k: _Placed(n, left + box.inner(k).x - n.width / 2, top + box.inner(k).y - n.height / 2)
        for k, n in box.nodes.items()
    }
    for (_, _, kind), edge in zip(box.edges, box.layout.edges, strict=True):
        if edge.points:  # none for a self-loop, which a topology cannot have
            out.append(_edge_path([(left + a, top + b) for a, b in edge.points], kind))
    for p in placed.values():
        _draw_node(p, out)
    out.append("</g>")
    return placed


def _legend(width: float, stages: Sequence[Category], out: list[str], y: float) -> float:
    """The legend under the picture, a row per group wrapped to ``width``; returns where it ends."""
    kinds: tuple[Kind, ...] = ("source", "processor", "sink", "store", "topic", "repartition", "changelog")
    groups: list[list[tuple[str, str]]] = [[(_shape(k, 0, 0, 44, 22), _STYLE[k][3]) for k in kinds]]
    store_edge = _attrs(stroke=_STORE_EDGE, stroke_dasharray="5 3", stroke_width=1.3)
    groups.append([(_edge_path([(0, 11), (40, 11)], "flow"), "records")])
    groups[-1].append((f'<path d="M0,11 H40"{store_edge}/>', "a processor's store"))
    groups[-1].append((_edge_path([(0, 11), (40, 11)], "changelog"), "store to changelog"))
    spark: list[tuple[str, str]] = []
    for category in stages:
        colour, _, meaning = _STAGE[category]
        swatch = _rect(0, 3, 44, 16, 3, fill=colour)
        swatch += _text(22, 15, category.upper(), 9, font_weight="bold", fill="#ffffff", text_anchor="middle")
        spark.append((swatch, meaning))
    if spark:
        groups.append(spark)
    out.append('<g class="legend">')
    row = y
    for group in groups:
        x = 0.0
        for svg, label in group:
            span = 52 + text_width(label, 11) + 24
            if x > 0 and x + span > width:
                x, row = 0.0, row + 30
            out.append(f'<g transform="translate({x + 20:.1f},{row:.1f})">{svg}')
            out.append(_text(52, 15, label, 11, fill="#2d3748") + "</g>")
            x += span
        row += 30
    out.append("</g>")
    return row + 6


def _topics(boxes: list[_Box], facts: _Facts) -> tuple[dict[str, _Node], list[tuple[str, str, str, str]]]:
    """The topics between the boxes, and the edges that join them: (tail, head) as laid out,
    then the box and the source or sink inside it that reads or writes the topic."""
    topics: dict[str, _Node] = {}
    edges: list[tuple[str, str, str, str]] = []
    for box in boxes:
        for n in box.described:
            read = n.topics if isinstance(n, SourceDescription) else []
            written = [n.topic] if isinstance(n, SinkDescription) and n.topic is not None else []
            for topic in [*read, *written]:
                topics.setdefault(f"t:{topic}", _node(f"t:{topic}", facts.topic_kind(topic), topic))
            edges += [(f"t:{topic}", box.key, box.key, f"n:{n.name}") for topic in read]
            edges += [(box.key, f"t:{topic}", box.key, f"n:{n.name}") for topic in written]
    return topics, edges


def topology_svg(topology: Topology, plan: PhysicalPlan | None = None, *, title: str | None = None) -> str:
    """The topology as an SVG document; with ``plan``, each sub-topology marked with its Spark stage."""
    facts = _Facts(topology)
    description = facts.description
    boxes: list[_Box] = [
        _sub_box(s, facts, _stage(plan, s.id) if plan else None)
        for s in sorted(description.subtopologies, key=lambda s: s.id)
    ]
    boxes += [_global_box(g, plan is not None) for g in sorted(description.global_stores, key=lambda g: g.id)]
    by_key = {b.key: b for b in boxes}
    topics, outer_edges = _topics(boxes, facts)
    sizes = {
        **{b.key: (b.width, b.height) for b in boxes},
        **{k: (t.width, t.height) for k, t in topics.items()},
    }
    ports: dict[int, tuple[float, float]] = {}  # an edge meets its box above or below its node
    for i, (tail, _head, box_key, inner) in enumerate(outer_edges):
        box = by_key[box_key]
        dx = box.inner_left + box.inner(inner).x - box.width / 2
        ports[i] = (dx, 0.0) if tail == box_key else (0.0, dx)
    outer = packed_layout(
        sizes, [(t, h) for t, h, _, _ in outer_edges], ports=ports, node_gap=36, layer_gap=44
    )

    heading = title or (plan.application_id if plan else "Topology")
    margin = 20.0
    width = max(outer.width, 640.0) + 2 * margin
    subtitle = "internal topics are named <application.id>-NAME on the cluster"
    if plan is not None:
        subtitle = (
            f"internal topics are named {plan.application_id}-NAME on the cluster; "
            "each sub-topology is marked with how the Spark runner runs it"
        )
    header = [_text(margin, 26, heading, 16, font_weight="bold", fill="#1a202c")]
    for i, line in enumerate(textwrap.wrap(subtitle, int((width - 2 * margin) / text_width("x", 11)))):
        header.append(_text(margin, 44 + 15 * i, line, 11, fill="#4a5568"))
    top = 44 + 15 * (len(header) - 2) + 30  # room above the first row for an edge round a box
    body: list[str] = []
    placed: dict[tuple[str, str], _Placed] = {}
    for key, box in by_key.items():
        ln = outer.nodes[key]
        x, y = margin + ln.x - box.width / 2, top + ln.y - box.height / 2
        for inner_key, p in _draw_box(box, x, y, body).items():
            placed[key, inner_key] = p
    for (tail, head, box_key, inner), edge in zip(outer_edges, outer.edges, strict=True):
        ln, box = outer.nodes[box_key], by_key[box_key]
        left, box_top = margin + ln.x - box.width / 2, top + ln.y - box.height / 2
        topic_key = head if tail == box_key else tail
        t, tn = topics[topic_key], outer.nodes[topic_key]
        t_left, t_top = margin + tn.x - t.width / 2, top + tn.y - t.height / 2
        route, straight = _topic_edge(
            [(margin + a, top + b) for a, b in edge.points],
            placed[box_key, inner],
            (left, box_top, left + box.width, box_top + box.height),
            (t_left, t_top, t_left + t.width, t_top + t.height),
            sink=tail == box_key,
        )
        body.append(_edge_path(route, "flow", straight))
    for key, node in topics.items():
        ln = outer.nodes[key]
        _draw_node(_Placed(node, margin + ln.x - node.width / 2, top + ln.y - node.height / 2), body)
    # With a plan the legend explains all three stages, so a reader learns what else is possible.
    height = _legend(width - 2 * margin, list(_STAGE) if plan else [], body, top + outer.height + 28)
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}"{_attrs(font_family=FONT)}>',
            f"<title>{html.escape(heading)}</title>",
            "<defs>",
            _marker("arrow", _EDGE),
            _marker("arrow-changelog", _STYLE["changelog"][1]),
            "</defs>",
            '<rect width="100%" height="100%" fill="#ffffff"/>',
            *header,
            *body,
            "</svg>",
            "",
        ]
    )


def _marker(name: str, colour: str) -> str:
    return (
        f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        f'orient="auto-start-reverse"><path d="M0,1 L10,5 L0,9 z" fill="{colour}"/></marker>'
    )


def topology_png(topology: Topology, plan: PhysicalPlan | None = None, *, scale: float = 2.0) -> bytes:
    """The SVG picture rasterised by resvg at ``scale`` (2: sharp on a high-density screen)."""
    import resvg_py

    return bytes(
        resvg_py.svg_to_bytes(svg_string=topology_svg(topology, plan), zoom=scale, background="white")
    )


def topology_html(topology: Topology, plan: PhysicalPlan | None = None) -> str:
    """A page that needs nothing else: the SVG inline, and the ``describe()`` text (and the plan)
    below it. No script, style sheet or font is fetched."""
    svg = topology_svg(topology, plan).split("\n", 1)[1]  # no XML declaration inside HTML
    heading = plan.application_id if plan else "Topology"
    details = [("describe()", str(topology.describe()))]
    if plan is not None:
        details.append(("Spark plan", str(plan)))
    sections = "\n".join(
        f"<details><summary>{html.escape(name)}</summary><pre>{html.escape(text)}</pre></details>"
        for name, text in details
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(heading)}: topology</title>
<style>
body {{ margin: 1.5rem; font-family: {FONT}; color: #1a202c; background: #ffffff; }}
.picture {{ overflow-x: auto; }}
.picture svg {{ max-width: none; height: auto; }}
details {{ margin-top: 1rem; }} summary {{ cursor: pointer; font-weight: bold; }}
pre {{ background: #f7fafc; padding: 0.75rem; overflow-x: auto; font-size: 12px; }}
</style>
</head>
<body>
<div class="picture">
{svg}</div>
{sections}
</body>
</html>
"""


def render(topology: Topology, fmt: Format, plan: PhysicalPlan | None = None) -> bytes:
    """The picture in ``fmt`` as bytes (text formats in UTF-8)."""
    if fmt == "png":
        return topology_png(topology, plan)
    if fmt == "html":
        return topology_html(topology, plan).encode()
    return topology_svg(topology, plan).encode()
