"""A layered (Sugiyama) layout of a small directed graph, top to bottom, in pure Python.

Graphviz's ``dot`` draws topologies best, but it is a system package; the
pure-Python alternative on PyPI (grandalf) is GPL/EPL-licensed, alpha and
unmaintained, and, like any flat layout, knows no clusters. A topology has
tens of nodes, so the classic steps are cheap here:

1. cycles broken by reversing the back edges of a depth-first search;
2. layers by longest path, then nodes without predecessors pulled down to just
   above their first successor (an input topic sits above the sub-topology that
   reads it, not at the top of the page) and the ``bottom`` nodes pushed to the
   last layer (a sub-topology's sinks line up where their topics leave it);
3. a dummy node per layer an edge crosses, so long edges are routed too;
4. crossings reduced by barycenter sweeps with adjacent transpositions,
   keeping the best order seen;
5. x by repeated sweeps that put each node where its neighbours (through the
   edges' ports) want it, subject to the order and the gaps: a weighted
   isotonic regression per layer, solved exactly by pool-adjacent-violators.
   Edges through dummies weigh more, so long edges run straight (dot's
   1/2/8 weights).

Coordinates are node centres; an edge's points run from its tail's bottom,
through its dummies, to its head's top.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

__all__ = ["Layout", "LayoutEdge", "LayoutNode", "layered_layout", "packed_layout"]

Point = tuple[float, float]


@dataclass
class LayoutNode:
    """A node and, after layout, its centre and layer."""

    key: str
    width: float
    height: float
    x: float = 0.0
    y: float = 0.0
    layer: int = 0
    dummy: bool = False


@dataclass
class LayoutEdge:
    """An edge as given, with its route from tail to head (tail first even when it points up);
    no points for a self-loop or an edge to a node not laid out."""

    tail: str
    head: str
    points: list[Point] = field(default_factory=list)


@dataclass
class Layout:
    """Real nodes by key, edges in the order given, and the size of the whole."""

    nodes: dict[str, LayoutNode]
    edges: list[LayoutEdge]
    width: float
    height: float


@dataclass
class _Link:
    """An edge of the layered graph (after reversal and dummies), one layer down."""

    upper: str
    lower: str
    upper_dx: float  # port: where on the node the edge attaches, from its centre
    lower_dx: float
    weight: float


def layered_layout(
    sizes: Mapping[str, tuple[float, float]],
    edges: Sequence[tuple[str, str]],
    *,
    ports: Mapping[int, tuple[float, float]] | None = None,
    weights: Mapping[int, float] | None = None,
    bottom: Collection[str] = (),
    node_gap: float = 24.0,
    layer_gap: float = 40.0,
) -> Layout:
    """Lay out nodes ``sizes`` (key -> width, height) joined by ``edges`` (tail, head).

    ``ports``: edge index -> (tail dx, head dx), where the edge meets its nodes,
    from their centres (default 0, the middle). ``weights``: edge index -> how
    hard the edge pulls its ends into line (default 1; less for an edge that may
    bend so that others run straight). ``bottom``: nodes that go to the last
    layer when nothing follows them."""
    ports = ports or {}
    weights = weights or {}
    order = list(sizes)
    real = [(i, t, h) for i, (t, h) in enumerate(edges) if t != h and t in sizes and h in sizes]
    reversed_ = _back_edges(order, [(t, h) for _, t, h in real])
    directed = [(h, t) if (t, h) in reversed_ else (t, h) for _, t, h in real]
    layer = _layers(order, directed, set(bottom))

    nodes = {k: LayoutNode(k, w, h, layer=layer[k]) for k, (w, h) in sizes.items()}
    links: list[_Link] = []
    chains: list[list[str]] = []  # per real edge: upper node, dummies, lower node
    for (i, t, _), (upper, lower) in zip(real, directed, strict=True):
        tail_dx, head_dx = ports.get(i, (0.0, 0.0))
        up_dx, low_dx = (head_dx, tail_dx) if upper != t else (tail_dx, head_dx)
        chain = [upper]
        for step in range(layer[upper] + 1, layer[lower]):
            dummy = f"\0{i}.{step}"
            nodes[dummy] = LayoutNode(dummy, 2.0, 0.0, layer=step, dummy=True)
            chain.append(dummy)
        chain.append(lower)
        chains.append(chain)
        for a, b in pairwise(chain):
            weight = (
                8.0 if nodes[a].dummy and nodes[b].dummy else 2.0 if nodes[a].dummy or nodes[b].dummy else 1.0
            )
            weight *= weights.get(i, 1.0)
            links.append(_Link(a, b, up_dx if a == upper else 0.0, low_dx if b == lower else 0.0, weight))

    layers = _order(order, nodes, links)
    _place_y(layers, nodes, layer_gap)
    _place_x(layers, nodes, links, node_gap)

    left = min((n.x - n.width / 2 for n in nodes.values()), default=0.0)
    for n in nodes.values():
        n.x -= left
    # One route per edge given; a self-loop (or an edge to an unknown node) gets none.
    routed = [LayoutEdge(t, h) for t, h in edges]
    for (i, t, _), chain in zip(real, chains, strict=True):
        tail_dx, head_dx = ports.get(i, (0.0, 0.0))
        first, last = nodes[chain[0]], nodes[chain[-1]]
        up_dx, low_dx = (tail_dx, head_dx) if chain[0] == t else (head_dx, tail_dx)
        points = [(first.x + up_dx, first.y + first.height / 2)]
        points += [(nodes[d].x, nodes[d].y) for d in chain[1:-1]]
        points.append((last.x + low_dx, last.y - last.height / 2))
        routed[i].points = points if chain[0] == t else points[::-1]
    width = max((n.x + n.width / 2 for n in nodes.values()), default=0.0)
    height = max((n.y + n.height / 2 for n in nodes.values()), default=0.0)
    real_nodes = {k: n for k, n in nodes.items() if not n.dummy}
    return Layout(real_nodes, routed, width, height)


def _back_edges(order: list[str], edges: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Edges that close a cycle in a depth-first search in the given order (to be reversed)."""
    out: dict[str, list[str]] = {k: [] for k in order}
    for t, h in edges:
        out[t].append(h)
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    back: set[tuple[str, str]] = set()
    for root in order:
        if root in state:
            continue
        # Iterative, so a long chain cannot exhaust Python's recursion limit.
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, i = stack.pop()
            if i < len(out[node]):
                stack.append((node, i + 1))
                nxt = out[node][i]
                if state.get(nxt) == 1:
                    back.add((node, nxt))
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
    return back


def _layers(order: list[str], edges: list[tuple[str, str]], bottom: set[str]) -> dict[str, int]:
    preds: dict[str, list[str]] = {k: [] for k in order}
    succs: dict[str, list[str]] = {k: [] for k in order}
    for t, h in edges:
        preds[h].append(t)
        succs[t].append(h)
    layer: dict[str, int] = {}
    remaining = {k: len(preds[k]) for k in order}
    ready = [k for k in order if remaining[k] == 0]
    while ready:  # Kahn's order, so every predecessor is placed first
        node = ready.pop(0)
        layer[node] = max((layer[p] + 1 for p in preds[node]), default=0)
        for s in succs[node]:
            remaining[s] -= 1
            if remaining[s] == 0:
                ready.append(s)
    for node in order:
        if not preds[node] and succs[node]:
            layer[node] = min(layer[s] for s in succs[node]) - 1
    last = max(layer.values(), default=0)
    for node in order:
        if node in bottom and not succs[node]:
            layer[node] = last
    # Pulling nodes down can empty a layer (the top one, often): close the gaps.
    used = {v: i for i, v in enumerate(sorted(set(layer.values())))}
    return {k: used[v] for k, v in layer.items()}


def _order(order: list[str], nodes: Mapping[str, LayoutNode], links: list[_Link]) -> list[list[str]]:
    """Nodes per layer, ordered to cross few edges. An edge counts where its port is: at
    ``position + dx / width`` of its node, so edges leaving one wide node in several places
    (a sub-topology's sinks) sort what they lead to from left to right too."""
    depth = max((n.layer for n in nodes.values()), default=-1) + 1
    above: dict[str, list[tuple[str, float, float]]] = {k: [] for k in nodes}  # node, its port, mine
    below: dict[str, list[tuple[str, float, float]]] = {k: [] for k in nodes}
    for link in links:
        up = link.upper_dx / (nodes[link.upper].width + 1)
        low = link.lower_dx / (nodes[link.lower].width + 1)
        below[link.upper].append((link.lower, low, up))
        above[link.lower].append((link.upper, up, low))
    # Start from a depth-first walk, so that what hangs together starts together.
    layers: list[list[str]] = [[] for _ in range(depth)]
    seen: set[str] = set()
    starts = [k for k in order if k in nodes] + [k for k in nodes if nodes[k].dummy]
    for root in sorted(starts, key=lambda k: nodes[k].layer):
        stack = [root]
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            layers[nodes[k].layer].append(k)
            stack.extend(n for n, _, _ in reversed(below[k]))
    best = [list(layer) for layer in layers]
    best_crossings = _crossings(best, above)
    for sweep in range(24):
        if best_crossings == 0:
            break
        going_down = sweep % 2 == 0
        for i in range(1, depth) if going_down else range(depth - 2, -1, -1):
            ref = {k: p for p, k in enumerate(layers[i - 1 if going_down else i + 1])}
            near = above if going_down else below
            bary: dict[str, float] = {}
            for p, k in enumerate(layers[i]):
                spots = [ref[n] + port for n, port, _ in near[k] if n in ref]
                bary[k] = sum(spots) / len(spots) if spots else float(p)
            layers[i].sort(key=lambda k: bary[k])
        _transpose(layers, above, below)
        crossings = _crossings(layers, above)
        if crossings < best_crossings:
            best, best_crossings = [list(layer) for layer in layers], crossings
    return best


_Near = Mapping[str, list[tuple[str, float, float]]]


def _transpose(layers: list[list[str]], above: _Near, below: _Near) -> None:
    """Swap neighbours in a layer while that removes crossings: only the edges of the two nodes
    cross differently after a swap, so only theirs are counted."""
    position = {k: p for layer in layers for p, k in enumerate(layer)}

    def crossing(u: str, v: str) -> int:  # crossings between u's and v's edges with u left of v
        return sum(
            1
            for near in (above, below)
            for a, a_port, _ in near[u]
            for b, b_port, _ in near[v]
            if position[a] + a_port > position[b] + b_port
        )

    improved = True
    rounds = 0
    while improved and rounds < 8:
        improved, rounds = False, rounds + 1
        for layer in layers:
            for p in range(len(layer) - 1):
                u, v = layer[p], layer[p + 1]
                if crossing(v, u) < crossing(u, v):
                    layer[p], layer[p + 1] = v, u
                    position[u], position[v] = p + 1, p
                    improved = True


def _crossings(layers: list[list[str]], above: _Near) -> int:
    """Crossings between each layer and the one above it, ports counted."""
    position = {k: p for layer in layers for p, k in enumerate(layer)}
    total = 0
    for layer in layers:
        ends = [(position[u] + u_port, position[k] + k_port) for k in layer for u, u_port, k_port in above[k]]
        total += sum(
            1
            for a in range(len(ends))
            for b in range(a + 1, len(ends))
            if (ends[a][0] - ends[b][0]) * (ends[a][1] - ends[b][1]) < 0
        )
    return total


def _place_y(layers: list[list[str]], nodes: Mapping[str, LayoutNode], layer_gap: float) -> None:
    top = 0.0
    for layer in layers:
        height = max((nodes[k].height for k in layer), default=0.0)
        for k in layer:
            nodes[k].y = top + height / 2
        top += height + layer_gap


def _place_x(
    layers: list[list[str]], nodes: Mapping[str, LayoutNode], links: list[_Link], node_gap: float
) -> None:
    for layer in layers:  # packed from the left to start with
        x = 0.0
        for k in layer:
            nodes[k].x = x + nodes[k].width / 2
            x += nodes[k].width + node_gap
    up: dict[str, list[_Link]] = {k: [] for k in nodes}
    down: dict[str, list[_Link]] = {k: [] for k in nodes}
    for link in links:
        down[link.upper].append(link)
        up[link.lower].append(link)

    def wanted(k: str, use_up: bool, use_down: bool) -> tuple[float, float]:
        """Where ``k``'s neighbours pull it, and how hard."""
        pulls = [(nodes[ln.upper].x + ln.upper_dx - ln.lower_dx, ln.weight) for ln in up[k] if use_up]
        pulls += [(nodes[ln.lower].x + ln.lower_dx - ln.upper_dx, ln.weight) for ln in down[k] if use_down]
        if not pulls:
            return nodes[k].x, 0.01  # free: stays put unless its neighbours in the layer push it
        weight = sum(w for _, w in pulls)
        return sum(x * w for x, w in pulls) / weight, weight

    depth = len(layers)
    sweeps = [(range(1, depth), True, False), (range(depth - 2, -1, -1), False, True)] * 6
    sweeps.append((range(depth), True, True))
    for indices, use_up, use_down in sweeps:
        for i in indices:
            layer = layers[i]
            targets = [wanted(k, use_up, use_down) for k in layer]
            xs = _fit(targets, [nodes[k].width for k in layer], node_gap)
            for k, x in zip(layer, xs, strict=True):
                nodes[k].x = x
    _straighten(layers, nodes, up, down, node_gap)


def _straighten(
    layers: list[list[str]],
    nodes: Mapping[str, LayoutNode],
    up: Mapping[str, list[_Link]],
    down: Mapping[str, list[_Link]],
    node_gap: float,
) -> None:
    """Least squares leaves a chain a few pixels off true where its neighbours pull it apart; a
    line of records reads better straight. An edge that is its tail's only full-weight edge down
    and its head's only one up (or that leads to or from a node with no other) is made vertical,
    top down and then bottom up, twice, as far as the neighbours in the layer leave room: the
    last pass lines a chain up on its most hemmed-in node."""

    def strong(links: list[_Link]) -> list[_Link]:
        return [ln for ln in links if ln.weight >= 1]

    def move(layer: list[str], p: int, x: float) -> None:
        k = nodes[layer[p]]
        low, high = -float("inf"), float("inf")
        if p > 0:
            left = nodes[layer[p - 1]]
            low = left.x + (left.width + k.width) / 2 + node_gap
        if p + 1 < len(layer):
            right = nodes[layer[p + 1]]
            high = right.x - (right.width + k.width) / 2 - node_gap
        if low <= high:
            k.x = min(max(x, low), high)

    for _ in range(2):
        for layer in layers:
            for p, key in enumerate(layer):
                above = strong(up[key])
                if len(above) == 1 and (len(strong(down[above[0].upper])) == 1 or not strong(down[key])):
                    ln = above[0]
                    move(layer, p, nodes[ln.upper].x + ln.upper_dx - ln.lower_dx)
        for layer in reversed(layers):
            for p, key in enumerate(layer):
                below = strong(down[key])
                if len(below) == 1 and (len(strong(up[below[0].lower])) == 1 or not strong(up[key])):
                    ln = below[0]
                    move(layer, p, nodes[ln.lower].x + ln.lower_dx - ln.upper_dx)


def _fit(targets: Sequence[tuple[float, float]], widths: Sequence[float], gap: float) -> list[float]:
    """Positions as close to ``targets`` (x, weight) as the order and the gaps allow (least squares).

    With ``x[i] = y[i] + offset[i]``, where ``offset`` accumulates the least distances between
    neighbours, the gaps become ``y`` non-decreasing: an isotonic regression, which
    pool-adjacent-violators solves exactly."""
    offsets = [0.0]
    for a, b in pairwise(widths):
        offsets.append(offsets[-1] + (a + b) / 2 + gap)
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for (x, w), off in zip(targets, offsets, strict=True):
        blocks.append([(x - off) * w, w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, w2, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += w2
            blocks[-1][2] += c
    out: list[float] = []
    for s, w, c in blocks:
        out.extend([s / w] * int(c))
    return [y + off for y, off in zip(out, offsets, strict=True)]


def packed_layout(
    sizes: Mapping[str, tuple[float, float]],
    edges: Sequence[tuple[str, str]],
    *,
    ports: Mapping[int, tuple[float, float]] | None = None,
    bottom: Collection[str] = (),
    node_gap: float = 24.0,
    layer_gap: float = 40.0,
    aspect: float = 1.6,
) -> Layout:
    """:func:`layered_layout` of each connected part of the graph on its own, the parts then set
    in rows (in the order of their first node) about ``aspect`` times as wide as high, as
    Graphviz packs components: side by side, a topology of many independent sub-topologies is
    a picture too wide to read."""
    ports = ports or {}
    part = {k: k for k in sizes}

    def root(k: str) -> str:
        while part[k] != k:
            part[k] = part[part[k]]
            k = part[k]
        return k

    for t, h in edges:
        if t in sizes and h in sizes:
            part[root(h)] = root(t)
    members: dict[str, list[str]] = {}
    for k in sizes:
        members.setdefault(root(k), []).append(k)
    layouts: list[tuple[Layout, list[int]]] = []
    for keys in members.values():
        inside = set(keys)
        indices = [i for i, (t, _) in enumerate(edges) if t in inside]
        layouts.append(
            (
                layered_layout(
                    {k: sizes[k] for k in keys},
                    [edges[i] for i in indices],
                    ports={j: ports[i] for j, i in enumerate(indices) if i in ports},
                    bottom=[k for k in bottom if k in inside],
                    node_gap=node_gap,
                    layer_gap=layer_gap,
                ),
                indices,
            )
        )
    area = sum((lay.width + node_gap) * (lay.height + layer_gap) for lay, _ in layouts)
    row_width = max(max((lay.width for lay, _ in layouts), default=0.0), (area * aspect) ** 0.5)
    nodes: dict[str, LayoutNode] = {}
    routed = [LayoutEdge(t, h) for t, h in edges]
    x = y = row_height = width = 0.0
    for lay, indices in layouts:
        if x > 0 and x + lay.width > row_width:
            x, y, row_height = 0.0, y + row_height + layer_gap, 0.0
        for k, n in lay.nodes.items():
            nodes[k] = LayoutNode(k, n.width, n.height, n.x + x, n.y + y, n.layer)
        for i, e in zip(indices, lay.edges, strict=True):
            routed[i] = LayoutEdge(e.tail, e.head, [(a + x, b + y) for a, b in e.points])
        width = max(width, x + lay.width)
        row_height = max(row_height, lay.height)
        x += lay.width + 2 * node_gap
    return Layout(nodes, routed, width, y + row_height)
