"""``kspark describe --format svg|png|html``: the topology picture (kspark/tools/picture.py).

No Kafka and no Spark session: the physical plan is made from the topology and
its config alone. The topology has one of each thing the picture draws: a
stateless chain (fused), a count (native), a stream-table join behind a
repartition, a windowed count, a Processor API store and a global table.
"""

from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kspark import (
    Consumed,
    Grouped,
    Materialized,
    Produced,
    StreamsBuilder,
    TimeWindows,
    Topology,
    cli,
)
from kspark.processor import Processor, ProcessorContext, Record
from kspark.processor.internals.describe import ProcessorDescription, SinkDescription, SourceDescription
from kspark.runtime.spark.plan import PhysicalPlan, physical_plan
from kspark.serde import Serdes
from kspark.state import Stores
from kspark.tools.layout import layered_layout
from kspark.tools.picture import render, topology_html, topology_png, topology_svg

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()
SVG = "{http://www.w3.org/2000/svg}"
CONFIG = {"application.id": "pic", "bootstrap.servers": "127.0.0.1:9"}


class Dedupe(Processor[str, str]):
    """Forwards a key's first value only (a Processor API store)."""

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self.seen: Any = context.get_state_store("seen")

    def process(self, record: Record[str, str]) -> None:
        if self.seen.get(record.key) is None:
            self.seen.put(record.key, record.value)
            self.context.forward(record)


def _upper(value: str) -> str:
    return value.upper()


def _not_x(_key: str, value: str) -> bool:
    return value != "x"


def _by_value(_key: str, value: str) -> str:
    return value


def _joined(click: str, user: str | None) -> str:
    return f"{click}/{user}"


def _country(_key: str, value: str) -> str:
    return value


def _with_country(value: str, country: str | None) -> str:
    return f"{value}@{country}"


def build_topology() -> Topology:
    b = StreamsBuilder()
    # a stateless chain: fused
    b.stream("raw", Consumed.with_(S, S)).filter(_not_x).map_values(_upper).to("clean", Produced.with_(S, S))
    # a count of strings: native
    b.stream("words", Consumed.with_(S, S)).group_by_key().count(
        Materialized.as_("word-counts")
    ).to_stream().to("word-counts-out", Produced.with_(S, L))
    # a key change, then a stream-table join: through a repartition topic
    users = b.table("users", Consumed.with_(S, S), Materialized.as_("users-store"))
    b.stream("clicks", Consumed.with_(S, S)).select_key(_by_value).join(users, _joined).to(
        "enriched", Produced.with_(S, S)
    )
    # a windowed count after a group_by: a repartition topic and a window store
    b.stream("views", Consumed.with_(S, S)).group_by(_by_value, Grouped.with_(S, S)).windowed_by(
        TimeWindows(size=60_000, grace=0)
    ).count(Materialized.as_("views-per-minute")).to_stream().map_values(str).to(
        "views-out", Produced.with_(S, S)
    )
    # a global table joined with a stream
    countries = b.global_table("countries", Consumed.with_(S, S), Materialized.as_("countries-store"))
    b.stream("orders", Consumed.with_(S, S)).join(countries, _country, _with_country).to(
        "orders-out", Produced.with_(S, S)
    )
    topology = b.build()
    # a Processor API store
    topology.add_source("events-source", "events", key_deserializer=S, value_deserializer=S)
    topology.add_processor("dedupe", Dedupe, "events-source")
    topology.add_state_store(
        Stores.key_value_store_builder(Stores.in_memory_key_value_store("seen"), S, S), "dedupe"
    )
    topology.add_sink("events-sink", "unique-events", "dedupe", key_serializer=S, value_serializer=S)
    return topology


@pytest.fixture(scope="module")
def topology() -> Topology:
    return build_topology()


@pytest.fixture(scope="module")
def plan(topology: Topology) -> PhysicalPlan:
    return physical_plan(topology, CONFIG)


@pytest.fixture(scope="module")
def svg(topology: Topology, plan: PhysicalPlan) -> ET.Element:
    return ET.fromstring(topology_svg(topology, plan).encode())


def _groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if cls in (g.get("class") or "").split()]


def _texts(element: ET.Element) -> str:
    return "\n".join(t for t in element.itertext())


def test_the_svg_names_every_processor_store_and_topic(topology: Topology, svg: ET.Element) -> None:
    description = topology.describe()
    nodes = [n for s in description.subtopologies for n in s.nodes]
    names = {n.name for n in nodes}
    stores = {st for n in nodes if isinstance(n, ProcessorDescription) for st in n.stores}
    topics = {t for n in nodes if isinstance(n, SourceDescription) for t in n.topics}
    topics |= {n.topic for n in nodes if isinstance(n, SinkDescription) and n.topic is not None}
    for g in description.global_stores:
        names |= {g.source.name, g.processor.name}
        stores.add(g.store_name)
        topics |= set(g.source.topics)
    assert {"dedupe", "events-source", "events-sink"} <= names
    assert {"seen", "word-counts", "users-store", "views-per-minute", "countries-store"} <= stores
    drawn = {g.get("data-name") for g in _groups(svg, "node")}
    missing = (names | stores | topics) - drawn
    assert not missing, missing
    text = _texts(svg)
    for name in names | stores | topics:  # and as text a reader sees (long names are wrapped)
        assert name.replace("-", "") in text.replace("-\n", "").replace("-", "")


def test_node_kinds_are_drawn_distinctly(svg: ET.Element) -> None:
    kinds = {g.get("data-name"): g.get("data-kind") for g in _groups(svg, "node")}
    assert kinds["events-source"] == "source"
    assert kinds["dedupe"] == "processor"
    assert kinds["events-sink"] == "sink"
    assert kinds["seen"] == "store"
    assert kinds["raw"] == "topic"
    # a stadium, a rectangle, a cut-corner octagon, a cylinder, a parallelogram; and captions
    first: dict[str, ET.Element] = {}
    for g in _groups(svg, "node"):
        first.setdefault(g.get("data-kind") or "", g)
    shape = {kind: next(c for c in g if c.tag != f"{SVG}title") for kind, g in first.items()}
    assert shape["source"].tag == shape["processor"].tag == f"{SVG}rect"
    assert float(shape["source"].get("rx", 0)) > 2 * float(shape["processor"].get("rx", 0))
    assert len((shape["sink"].get("points") or "").split()) == 8
    assert len((shape["topic"].get("points") or "").split()) == 4
    assert shape["store"].tag == f"{SVG}path"
    for kind, caption in (
        ("source", "source"),
        ("sink", "sink"),
        ("processor", "processor"),
        ("topic", "topic"),
    ):
        assert caption in _texts(first[kind])
    assert "key-value store" in _texts(next(g for g in _groups(svg, "node") if g.get("data-name") == "seen"))
    assert "window store" in _texts(
        next(g for g in _groups(svg, "node") if g.get("data-name") == "views-per-minute")
    )


def test_repartition_and_changelog_topics_are_marked(topology: Topology, svg: ET.Element) -> None:
    kinds = {g.get("data-name"): g.get("data-kind") for g in _groups(svg, "node")}
    repartition = [
        t for t, p in topology.internal_builder.internal_topics().items() if p.kind == "repartition"
    ]
    assert len(repartition) == 2  # the join's and the windowed count's
    for topic in repartition:
        assert kinds[topic] == "repartition", topic
    # every logged store has its changelog topic, named as Kafka Streams names it (without the app id)
    for store in ("seen", "word-counts", "views-per-minute", "users-store"):
        assert kinds[f"{store}-changelog"] == "changelog"
    assert "countries-store-changelog" not in kinds  # a global store's topic is its changelog
    assert kinds["countries"] == "topic"
    assert "repartition topic" in _texts(svg) and "changelog topic" in _texts(svg)
    # a changelog topic hangs off its store inside the sub-topology's box
    box = next(b for b in _groups(svg, "subtopology") if any(g.get("data-name") == "seen" for g in b.iter()))
    assert any(g.get("data-name") == "seen-changelog" for g in box.iter())


def test_each_subtopology_is_marked_with_its_stage_on_spark(plan: PhysicalPlan, svg: ET.Element) -> None:
    boxes = {b.get("id"): b for b in _groups(svg, "subtopology")}
    assert len(boxes) == len(plan.subtopologies)
    stages = {}
    for sub in plan.subtopologies:
        box = boxes[f"sub-{sub.subtopology}"]
        stages[sub.subtopology] = box.get("data-stage")
        text = _texts(box)
        assert f"Sub-topology {sub.subtopology}" in text
        assert sub.stage.value in text  # the words `kspark describe --spark` prints
        assert box.get("data-stage", "").upper() in text
        for decision in sub.decisions:
            assert decision.optimisation in text

    def stage_of(node: str) -> str | None:
        return next(
            b.get("data-stage") for b in boxes.values() if any(g.get("data-name") == node for g in b.iter())
        )

    assert stage_of("KSTREAM-FILTER-0000000001") == "fused"  # the stateless chain
    assert stage_of("word-counts") == "native"  # a count of strings
    assert stage_of("dedupe") == "engine"  # the Processor API
    assert stage_of("views-per-minute") in ("native", "engine")
    assert {"fused", "native", "engine"} <= set(stages.values())
    legend = _texts(next(iter(_groups(svg, "legend"))))
    for word in ("NATIVE", "FUSED", "ENGINE", "source", "sink", "state store", "repartition topic"):
        assert word in legend
    globals_ = _groups(svg, "global-store")
    assert len(globals_) == 1 and "countries-store" in _texts(globals_[0])


def test_without_a_plan_nothing_is_marked(topology: Topology) -> None:
    root = ET.fromstring(topology_svg(topology).encode())
    assert all(b.get("data-stage") is None for b in _groups(root, "subtopology"))
    assert "ENGINE" not in _texts(root)


def _bounds(g: ET.Element) -> tuple[float, float, float, float]:
    """left, top, right, bottom of a node's or a box's shape, read from the SVG."""
    shape = next(c for c in g if c.tag != f"{SVG}title")
    if shape.tag == f"{SVG}rect":
        x, y = float(shape.get("x", 0)), float(shape.get("y", 0))
        return x, y, x + float(shape.get("width", 0)), y + float(shape.get("height", 0))
    if shape.tag == f"{SVG}polygon":
        pts = [tuple(map(float, p.split(","))) for p in (shape.get("points") or "").split()]
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        return min(xs), min(ys), max(xs), max(ys)
    # a store's cylinder: M left,top+e A... right,top+e V bottom-e A... Z
    number = r"(-?[\d.]+)"
    found = re.match(rf"M{number},{number} A\S+ 0 0,1 {number},\S+ V{number}", shape.get("d") or "")
    assert found, shape.get("d")
    left, top, right, bottom = map(float, found.groups())
    return left, top - 5, right, bottom + 5


def _disjoint(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def test_nothing_overlaps(svg: ET.Element) -> None:
    """Boxes are disjoint; so are the nodes (inside a box and between boxes), and each box's nodes
    lie inside it, right of its panel; the topics between boxes lie outside every box."""
    boxes = {b.get("id"): b for b in _groups(svg, "subtopology") + _groups(svg, "global-store")}
    nodes = [_bounds(g) for g in _groups(svg, "node")]
    assert len(boxes) == 9 and len(nodes) > 40
    for group in (nodes, [_bounds(b) for b in boxes.values()]):
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                assert _disjoint(a, b), (a, b)
    inside: set[int] = set()
    for box in boxes.values():
        left, top, right, bottom = _bounds(box)
        # the panel's lines (monospace: 0.6 em a character) end left of every node of the box
        nodes_left = min(_bounds(g)[0] for g in _groups(box, "node"))
        for text in box.findall(f"{SVG}text"):
            end = float(text.get("x", 0)) + len(text.text or "") * float(text.get("font-size", 0)) * 0.6021
            assert end < nodes_left - 16, (box.get("id"), text.text)
        for g in _groups(box, "node"):
            x0, y0, x1, y1 = _bounds(g)
            assert left + 200 < x0 and x1 < right and top < y0 and y1 < bottom, (
                box.get("id"),
                g.get("data-name"),
            )
            inside.add(id(g))
    for g in _groups(svg, "node"):
        if id(g) not in inside:
            assert g.get("data-kind") in ("topic", "repartition")
            assert all(_disjoint(_bounds(g), _bounds(b)) for b in boxes.values())


def test_an_edge_against_the_flow_goes_round_its_box() -> None:
    """A sub-topology that writes the topic it reads: the edge back to its source must not be
    drawn through the box's nodes."""
    b = StreamsBuilder()
    b.stream("loop", Consumed.with_(S, S)).filter(_not_x).map_values(_upper).to("loop", Produced.with_(S, S))
    topology = b.build()
    root = ET.fromstring(topology_svg(topology, physical_plan(topology, CONFIG)).encode())
    (box,) = _groups(root, "subtopology")
    left, top, right, bottom = _bounds(box)
    source = _bounds(next(g for g in _groups(root, "node") if g.get("data-kind") == "source"))
    edges = [e for e in root.findall(f"{SVG}path") if e.get("class") == "edge flow"]  # between boxes
    assert len(edges) == 2  # the sink's edge to the topic, and the topic's back to the source
    back = next(e for e in edges if "L" in (e.get("d") or ""))
    points = [tuple(map(float, xy)) for xy in re.findall(r"(-?[\d.]+),(-?[\d.]+)", back.get("d") or "")]
    assert points[-1][1] == source[1]  # it ends on the source's top...
    for x, y in points[:-1]:  # ...and reaches it from above the box, not through it
        assert not (left < x < right and top < y < bottom), (x, y)
    assert max(x for x, _ in points) > right


def test_png_is_a_png_of_plausible_size(topology: Topology, plan: PhysicalPlan) -> None:
    png = topology_png(topology, plan, scale=1.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    root = ET.fromstring(topology_svg(topology, plan).encode())
    assert (width, height) == (round(float(root.get("width", 0))), round(float(root.get("height", 0))))
    assert 600 <= width <= 6000 and 400 <= height <= 8000
    assert len(png) > 20_000  # not blank: text and shapes compress to more than this
    double = topology_png(topology, plan)
    assert struct.unpack(">II", double[16:24]) == (width * 2, height * 2)


def test_html_embeds_the_svg_and_fetches_nothing(topology: Topology, plan: PhysicalPlan) -> None:
    page = topology_html(topology, plan)
    assert page.startswith("<!DOCTYPE html>")
    start, end = page.index("<svg"), page.index("</svg>") + len("</svg>")
    ET.fromstring(page[start:end])  # the inline picture is well-formed on its own
    assert "dedupe" in page[start:end]
    assert str(topology.describe()).splitlines()[1].strip() in page  # the text layout too
    for fetch in ("<script", "<link", "src=", "url(http", "@import"):
        assert fetch not in page
    assert render(topology, "html", plan) == page.encode()


def test_the_layout_routes_long_edges_and_cycles() -> None:
    sizes = {k: (40.0, 20.0) for k in "abcde"}
    layout = layered_layout(sizes, [("a", "b"), ("b", "c"), ("a", "c"), ("c", "a"), ("d", "e")], bottom={"e"})
    assert [layout.nodes[k].layer for k in "abc"] == [0, 1, 2]
    assert layout.nodes["e"].layer == 2  # pushed to the last layer
    long_edge = layout.edges[2]
    assert len(long_edge.points) == 3  # through a dummy in layer 1
    back = layout.edges[3]
    assert back.points[0][1] > back.points[-1][1]  # c -> a runs upwards, tail first
    for a in layout.nodes.values():  # disjoint
        for b in layout.nodes.values():
            if a is not b and a.layer == b.layer:
                assert abs(a.x - b.x) >= (a.width + b.width) / 2


# The app imports this module by the name pytest gave it, so its classes are these very ones.
APP = f"""
from {__name__} import build_topology, CONFIG
topology = build_topology
config = dict(CONFIG)
"""


def test_cli_writes_the_picture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "picture_app_mod.py"
    app.write_text(APP)
    for fmt in ("svg", "png", "html"):
        out = tmp_path / f"topology.{fmt}"
        assert cli.main(["describe", str(app), "--format", fmt, "--output", str(out)]) == 0
        assert out.stat().st_size > 1000
        assert str(out) in capsys.readouterr().err
    root = ET.parse(tmp_path / "topology.svg").getroot()
    assert {b.get("data-stage") for b in _groups(root, "subtopology")} == {"fused", "native", "engine"}
    assert (tmp_path / "topology.png").read_bytes()[:4] == b"\x89PNG"
    # svg to stdout when no file is given; text stays the default
    assert cli.main(["describe", str(app), "--format", "svg"]) == 0
    assert capsys.readouterr().out.startswith("<?xml")
    assert cli.main(["describe", str(app), "--output", str(tmp_path / "t.txt")]) == 0
    assert (tmp_path / "t.txt").read_text().startswith("Topologies:")


def test_cli_png_to_a_terminal_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "picture_tty_app_mod.py"
    app.write_text(APP)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert cli.main(["describe", str(app), "--format", "png"]) == 2
    assert "--output" in capsys.readouterr().err


def test_cli_picture_of_something_that_is_not_a_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "not_a_topology_app_mod.py"
    app.write_text("class T:\n    def describe(self):\n        return 'x'\ntopology = T()\nconfig = {}\n")
    assert cli.main(["describe", str(app), "--format", "svg"]) == 2
    assert "not a kspark Topology" in capsys.readouterr().err
