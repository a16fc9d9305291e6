// Heap snapshots of V8 (the .heapsnapshot JSON the DevTools protocol streams), summed by constructor and
// diffed between two points of a run: which kinds of objects grew, and what holds the new ones.

/** The class DevTools' "Summary" view would file a node under. */
function classOf(type, name) {
  switch (type) {
    case "object":
    case "native":
      return name;
    case "string":
    case "concatenated string":
    case "sliced string":
      return "(string)";
    case "closure":
      return "(closure)";
    case "code":
      return "(compiled code)";
    case "hidden":
      return "(system)";
    default:
      return `(${type})`;
  }
}

/** Flat typed view of a snapshot: each node's class, id and size, and the edges from it. */
function index(snapshot) {
  const { meta } = snapshot.snapshot;
  const nodeFields = meta.node_fields.length;
  const edgeFields = meta.edge_fields.length;
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const at = (fields, name) => fields.indexOf(name);
  const [typeAt, nameAt, idAt, sizeAt, edgeCountAt] = ["type", "name", "id", "self_size", "edge_count"].map((f) =>
    at(meta.node_fields, f),
  );
  const [edgeTypeAt, edgeNameAt, toNodeAt] = ["type", "name_or_index", "to_node"].map((f) => at(meta.edge_fields, f));
  const { nodes, edges, strings } = snapshot;
  const count = nodes.length / nodeFields;
  const classes = new Array(count);
  const ids = new Float64Array(count);
  const sizes = new Float64Array(count);
  const firstEdge = new Uint32Array(count + 1);
  let edge = 0;
  for (let i = 0; i < count; i++) {
    const base = i * nodeFields;
    classes[i] = classOf(nodeTypes[nodes[base + typeAt]], strings[nodes[base + nameAt]]);
    ids[i] = nodes[base + idAt];
    sizes[i] = nodes[base + sizeAt];
    firstEdge[i] = edge;
    edge += nodes[base + edgeCountAt] * edgeFields;
  }
  firstEdge[count] = edge;
  /** Calls visit(toNode, label) for each strong edge from node i. */
  const forEachEdge = (i, visit) => {
    for (let e = firstEdge[i]; e < firstEdge[i + 1]; e += edgeFields) {
      const type = edgeTypes[edges[e + edgeTypeAt]];
      if (type === "weak") continue;
      const name = edges[e + edgeNameAt];
      const label = type === "element" || type === "hidden" ? "[]" : `.${strings[name]}`;
      visit(edges[e + toNodeAt] / nodeFields, label);
    }
  };
  return { count, classes, ids, sizes, forEachEdge };
}

function totals(view) {
  const byClass = new Map();
  for (let i = 0; i < view.count; i++) {
    const entry = byClass.get(view.classes[i]) ?? { count: 0, size: 0 };
    entry.count += 1;
    entry.size += view.sizes[i];
    byClass.set(view.classes[i], entry);
  }
  return byClass;
}

/**
 * What grew from snapshot `a` to snapshot `b`: per class that changed, the change in objects and bytes
 * (largest growth first, `limit` rows), and for the classes that grew, what holds their new objects (those whose ids were
 * not in `a`): the holder's class and the property, top three.
 * @returns {{ totalA: number, totalB: number, rows: { name: string, countA: number, countB: number, sizeA: number, sizeB: number, retainers: string[] }[] }}
 */
export function diffSnapshots(a, b, limit = 10) {
  const [viewA, viewB] = [index(a), index(b)];
  const [totalsA, totalsB] = [totals(viewA), totals(viewB)];
  const names = new Set([...totalsA.keys(), ...totalsB.keys()]);
  const zero = { count: 0, size: 0 };
  const rows = [...names]
    .map((name) => {
      const [x, y] = [totalsA.get(name) ?? zero, totalsB.get(name) ?? zero];
      return { name, countA: x.count, countB: y.count, sizeA: x.size, sizeB: y.size, retainers: [] };
    })
    .filter((r) => r.sizeA !== r.sizeB || r.countA !== r.countB)
    .sort((x, y) => y.sizeB - y.sizeA - (x.sizeB - x.sizeA))
    .slice(0, limit);

  const grown = new Map(rows.filter((r) => r.sizeB > r.sizeA).map((r) => [r.name, new Map()]));
  const idsA = new Set(viewA.ids);
  for (let i = 0; i < viewB.count; i++) {
    viewB.forEachEdge(i, (to, label) => {
      const holders = grown.get(viewB.classes[to]);
      if (!holders || idsA.has(viewB.ids[to])) return;
      const key = `${viewB.classes[i]}${label}`;
      holders.set(key, (holders.get(key) ?? 0) + 1);
    });
  }
  for (const row of rows) {
    const holders = grown.get(row.name);
    if (!holders) continue;
    row.retainers = [...holders.entries()]
      .sort(([, x], [, y]) => y - x)
      .slice(0, 3)
      .map(([key, n]) => `${key} (${n})`);
  }
  const sum = (view) => view.sizes.reduce((s, x) => s + x, 0);
  return { totalA: sum(viewA), totalB: sum(viewB), rows };
}
