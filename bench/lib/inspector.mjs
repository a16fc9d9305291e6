// A small Chrome DevTools Protocol client for the V8 isolate of the Worker that `wrangler dev` serves,
// through its inspector port (`--inspector-port`): wrangler's inspector proxy forwards one DevTools
// session to workerd's inspector of the user Worker. Used by the soak to read the isolate's own JS heap
// (Runtime.getHeapUsage, after HeapProfiler.collectGarbage) and to take heap snapshots.
//
// wrangler's proxy keeps every message the isolate sends (one Runtime.consoleAPICalled per console.log)
// in memory until a DevTools session drains it, and draining thousands at once overwhelms it: connect
// before the traffic starts and stay connected. Events are dropped here except the ones a caller awaits.

const CONNECT_TIMEOUT_MS = 60_000;
const COMMAND_TIMEOUT_MS = 120_000;
const MIN_COLLECTIONS = 3;
const MAX_COLLECTIONS = 6;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @param {number} port the inspector port given to `wrangler dev --inspector-port`
 * @param {() => Promise<unknown>} wake makes the isolate run (one request to the Worker): see `whileWaking`
 * @param {string} path the session's path: `/ws` on wrangler's proxy, `/core:user:<worker>` on workerd's own inspector
 * @returns {Promise<Inspector>}
 */
export async function connectInspector(port, wake, path = "/ws") {
  // The proxy accepts local origins only, and Node's WebSocket sends no Origin header of its own.
  const socket = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers: { Origin: "http://127.0.0.1" } });
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("inspector: no connection within 60 s")), CONNECT_TIMEOUT_MS);
    socket.addEventListener("open", () => {
      clearTimeout(timer);
      resolve();
    });
    socket.addEventListener("error", (event) => {
      clearTimeout(timer);
      reject(new Error(`inspector: cannot connect to port ${port}: ${event.message ?? "error"}`));
    });
  });
  const inspector = new Inspector(socket, wake);
  // workerd answers HeapProfiler.collectGarbage only once the domain is enabled.
  await inspector.send("HeapProfiler.enable");
  return inspector;
}

class Inspector {
  #socket;
  #nextId = 1;
  #pending = new Map(); // id -> { resolve, reject, timer }
  #listeners = new Map(); // event method -> handler
  events = 0; // events received (console calls and the like), for the report
  closed = false;

  #wake;
  /**
   * The isolate's execution context, learnt from its console calls (the app logs a line per request):
   * wrangler's proxy enables the Runtime domain for itself, so this session is never told of the context,
   * and `Runtime.evaluate` needs it named.
   */
  #contextId;

  constructor(socket, wake) {
    this.#socket = socket;
    this.#wake = wake;
    socket.addEventListener("message", (event) => this.#receive(String(event.data)));
    socket.addEventListener("close", () => {
      this.closed = true;
      for (const { reject, timer } of this.#pending.values()) {
        clearTimeout(timer);
        reject(new Error("inspector: connection closed"));
      }
      this.#pending.clear();
    });
  }

  #receive(text) {
    const message = JSON.parse(text);
    // Answers to the proxy's own commands (ids from 1e8) come through too; unknown ids are ignored.
    if (message.id !== undefined) {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      clearTimeout(pending.timer);
      if (message.error) pending.reject(new Error(`inspector: ${JSON.stringify(message.error)}`));
      else pending.resolve(message.result);
      return;
    }
    this.events += 1;
    if (message.method === "Runtime.consoleAPICalled") this.#contextId = message.params.executionContextId;
    this.#listeners.get(message.method)?.(message.params);
  }

  /** Sends one command and resolves with its result. */
  send(method, params = {}) {
    if (this.closed) return Promise.reject(new Error("inspector: connection closed"));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`inspector: ${method} unanswered after ${COMMAND_TIMEOUT_MS / 1000} s`));
      }, COMMAND_TIMEOUT_MS);
      this.#pending.set(id, { resolve, reject, timer });
      this.#socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /**
   * V8 runs a garbage collection or a heap snapshot asked for by the inspector as a task of the isolate,
   * and workerd runs an isolate's tasks only when the isolate runs (a request): with no traffic (before
   * the load, after it) the command would wait forever. So while it is pending, the isolate is woken by a
   * request after 50 ms, then every 250 ms.
   */
  async whileWaking(method, params) {
    let pending = true;
    const waking = (async () => {
      await sleep(50);
      while (pending) {
        await this.#wake().catch(() => {});
        await sleep(250);
      }
    })();
    try {
      return await this.send(method, params);
    } finally {
      pending = false;
      await waking;
    }
  }

  /**
   * The isolate's heap in bytes, before and after garbage collection. V8 keeps the last console messages
   * for an attached inspector (up to 1000, with their arguments); they are discarded first, since no
   * deployed isolate holds them. One full collection does not free all garbage: workerd's API objects are
   * C++ objects with JS wrappers, and what a dead wrapper held only becomes collectable in a later
   * collection (code being aged out too). After one, the figure jumps by up to 20 % from sample to
   * sample, after two still by 7 %, after three it is steady; so at least MIN_COLLECTIONS, then more
   * until one frees less than 0.5 % (at most MAX_COLLECTIONS). The last figure is the heap kept.
   */
  async heapUsage() {
    const before = await this.send("Runtime.getHeapUsage");
    await this.send("Runtime.discardConsoleEntries");
    let used = before.usedSize;
    let after = before;
    let collections = 0;
    while (collections < MAX_COLLECTIONS) {
      await this.whileWaking("HeapProfiler.collectGarbage");
      collections += 1;
      after = await this.send("Runtime.getHeapUsage");
      const freed = used - after.usedSize;
      used = after.usedSize;
      if (collections >= MIN_COLLECTIONS && freed < 0.005 * used) break;
    }
    return { usedBeforeGc: before.usedSize, used: after.usedSize, total: after.totalSize, collections };
  }

  /**
   * The isolate's bounded caches: every Map with a numeric own `maxEntries` (src/bounded-map.ts), found
   * with `Runtime.queryObjects` (every object whose prototype chain holds Map.prototype). Returns each
   * one's bound and size; with `empty`, clears them afterwards. No code of the Worker is needed for it.
   * @returns {Promise<{ maxEntries: number, size: number }[]>}
   */
  async boundedCaches({ empty }) {
    if (this.#contextId === undefined) throw new Error("inspector: the isolate has logged nothing yet");
    const objectGroup = "soak-bounded-caches";
    try {
      const prototype = await this.whileWaking("Runtime.evaluate", {
        expression: "Map.prototype",
        contextId: this.#contextId,
        objectGroup,
      });
      const { objects } = await this.whileWaking("Runtime.queryObjects", {
        prototypeObjectId: prototype.result.objectId,
        objectGroup,
      });
      const { result } = await this.whileWaking("Runtime.callFunctionOn", {
        objectId: objects.objectId,
        functionDeclaration: `function (empty) {
          const caches = this.filter((map) => Object.hasOwn(map, "maxEntries") && typeof map.maxEntries === "number");
          const sizes = caches.map((map) => ({ maxEntries: map.maxEntries, size: map.size }));
          if (empty) for (const map of caches) map.clear();
          return sizes;
        }`,
        arguments: [{ value: empty }],
        returnByValue: true,
      });
      return result.value.sort((a, b) => b.maxEntries - a.maxEntries || b.size - a.size);
    } finally {
      await this.send("Runtime.releaseObjectGroup", { objectGroup }).catch(() => {});
    }
  }

  /** A full heap snapshot (it collects garbage first), parsed. */
  async heapSnapshot() {
    const chunks = [];
    this.#listeners.set("HeapProfiler.addHeapSnapshotChunk", ({ chunk }) => chunks.push(chunk));
    try {
      await this.whileWaking("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    } finally {
      this.#listeners.delete("HeapProfiler.addHeapSnapshotChunk");
    }
    return JSON.parse(chunks.join(""));
  }

  close() {
    this.closed = true;
    this.#socket.close();
  }
}
