// The feed round's cost (bench/README.md, "The feed round"): a scheduled run (the Cron Trigger: retention and the
// feed round side by side, src/scheduled.ts) recorded once through the instrumented worker against the real local
// D1 and a local feed server (node:http on loopback, fetched with FEED_FETCH_ALLOW_PRIVATE=true), then replayed in
// the isolate-only worker (D1 answers and the feed hosts' answers from the recording) to measure its isolate CPU;
// and the parse of a 64 KiB channel head alone. The feed server is a bench copy of test/feed-server.ts's shapes
// (that file is TypeScript for the test suites): realistic podcast feeds, and element-dense heads.
import { createHash, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { cpuMs, median, runSample } from "./load.mjs";
import { appPasswordRequest, GPODDER_DEVICE, gpodderJson, gpodderWarmUp } from "./scenario.mjs";

/** src/feeds/round.ts: the round's limits, as the harness checks the run it recorded. */
export const FEEDS_PER_ROUND = 8;
/** The Workers Free plan: CPU per invocation, subrequests per invocation. */
export const FREE_CPU_MS = 10;
export const FREE_SUBREQUESTS = 50;
/** The parse target of issue 36, point 5, for a 64 KiB head. */
export const PARSE_TARGET_US = 500;
/** Parses per measured request (minus a request that parses nothing): the request's own cost divided away. */
const PARSES_PER_REQUEST = 20;

const ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd";
const PODCAST = "https://podcastindex.org/namespace/1.0";
const KIB = 1024;

const RSS_OPEN = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="${ITUNES}" xmlns:podcast="${PODCAST}" xmlns:atom="http://www.w3.org/2005/Atom"
  xmlns:content="http://purl.org/rss/1.0/modules/content/">
  <channel>
`;

/** A paragraph of show notes as hosts write them: HTML, links, entities. */
const paragraph = (n) =>
  `<p>In part ${n}, <b>two engineers</b> talk about the tools they use &amp; the ones they gave up on: ` +
  `<a href="https://tech.example.com/notes/${n}?utm_source=feed&amp;utm_medium=rss">the notes</a>, ` +
  `<em>the transcript</em> and a list of everything mentioned.</p>\n`;

/**
 * A realistic channel head of about `bytes` (UTF-8): the iTunes and Podcasting 2.0 elements hosts write (people,
 * funding, categories, locked, guid), and the bulk of it a long HTML description in CDATA (and its iTunes summary).
 */
export function realisticHead(bytes, title = "Tech Talk Weekly", podcastGuid = realisticGuid(0)) {
  const fixed = `${RSS_OPEN}    <atom:link href="https://feeds.example.com/tech.rss" rel="self" type="application/rss+xml"/>
    <title><![CDATA[${title}]]></title>
    <link>https://tech.example.com/</link>
    <language>en-us</language>
    <copyright>&#169; 2026 Tech Talk Media</copyright>
    <lastBuildDate>Mon, 30 Nov 2026 10:00:00 GMT</lastBuildDate>
    <generator>Example Host 4.2</generator>
    <itunes:author>Ada &amp; Grace</itunes:author>
    <itunes:owner><itunes:name>Ada</itunes:name><itunes:email>ada@tech.example.com</itunes:email></itunes:owner>
    <managingEditor>editor@tech.example.com (The Editor)</managingEditor>
    <itunes:image href="https://cdn.example.com/tech/cover.jpg"/>
    <image><url>https://cdn.example.com/tech/small.jpg</url><title>Tech</title><link>https://tech.example.com/</link></image>
    <itunes:category text="Technology"><itunes:category text="Tech News"/></itunes:category>
    <itunes:category text="Education"><itunes:category text="How To"/></itunes:category>
    <itunes:explicit>false</itunes:explicit>
    <itunes:type>episodic</itunes:type>
    <podcast:guid>${podcastGuid}</podcast:guid>
    <podcast:locked owner="ada@tech.example.com">no</podcast:locked>
    <podcast:funding url="https://tech.example.com/support">Support the show</podcast:funding>
    <podcast:person role="host" img="https://cdn.example.com/ada.jpg" href="https://tech.example.com/ada">Ada</podcast:person>
    <podcast:person role="host" img="https://cdn.example.com/grace.jpg">Grace</podcast:person>
    <podcast:location geo="geo:52.52,13.40">Berlin</podcast:location>
`;
  // The description and the iTunes summary share what is left, each a run of paragraphs.
  const each = Math.max(0, (bytes - Buffer.byteLength(fixed) - 120) / 2);
  let notes = "";
  for (let n = 1; Buffer.byteLength(notes) + 300 < each; n++) notes += paragraph(n);
  return `${fixed}    <description><![CDATA[${notes}]]></description>
    <itunes:summary><![CDATA[${notes}]]></itunes:summary>
`;
}

/**
 * The podcast:guid of realistic feed `n`: a podcast of its own per feed (one shared guid made the feed round's guid
 * merge, docs/API.md §18, fold every realistic subscription of the bench user into one).
 */
function realisticGuid(n) {
  return `917393e3-1b1e-5cef-ace4-${n.toString(16).padStart(12, "0")}`;
}

/** An element-dense head of about `bytes`: test/feed-server.ts's /feeds/endless.rss, cut to a size. */
export function denseHead(bytes) {
  const open = `<?xml version="1.0"?><rss version="2.0" xmlns:itunes="${ITUNES}"><channel><title>Dense</title>`;
  const element = "<itunes:keywords>more, and more</itunes:keywords>";
  return open + element.repeat(Math.max(0, Math.floor((bytes - open.length) / element.length)));
}

/** Episode items after the head: what the fetch must never read. */
const items = (count) =>
  Array.from(
    { length: count },
    (_, n) => `    <item>
      <title>Episode ${n}: the long road</title>
      <guid isPermaLink="false">tech-${n}</guid>
      <enclosure url="https://media.example.com/tech/${n}.mp3" length="${1000 * n}" type="audio/mpeg"/>
      <description><![CDATA[<p>Show notes for episode ${n}</p>]]></description>
    </item>
`,
  ).join("");

const feedOf = (head) => `${head}${items(30)}  </channel>\n</rss>\n`;

/**
 * The scenarios: each a list of feed paths on the local server, FEEDS_PER_ROUND + 2 of them (two stay due).
 * `feed-round`: heads of usual sizes (4 to 16 KiB), one of 64 KiB, one behind two 301s; `feed-round-dense`: 256 KiB
 * element-dense heads (the round parses two, HEAD_CHARS_PER_ROUND, and defers the rest); `feed-round-endless`: a
 * head that never ends (each fetch reads 1 MiB, the parse takes its first 256 KiB); `feed-round-moves`: usual heads
 * that each name another usual feed of the same podcast as their `itunes:new-feed-url` (src/feeds/moves.ts: the round
 * fetches and parses those too, out of the same requests, bytes and parse share, and learns the moves that fit);
 * `feed-round-moves-endless`: the same heads, each naming a head that never ends (the named URLs are read only out
 * of the bytes the round's own fetches left, READ_BYTES_PER_ROUND).
 */
export const FEED_SCENARIOS = {
  "feed-round": Array.from({ length: FEEDS_PER_ROUND + 2 }, (_, n) =>
    n === 1 ? `/redirect/301/2/feeds/realistic/${n}.rss` : `/feeds/realistic/${n}.rss`,
  ),
  "feed-round-dense": Array.from({ length: FEEDS_PER_ROUND + 2 }, (_, n) => `/feeds/dense/${n}.rss`),
  "feed-round-endless": Array.from({ length: FEEDS_PER_ROUND + 2 }, (_, n) => `/feeds/endless/${n}.rss`),
  "feed-round-moves": Array.from({ length: FEEDS_PER_ROUND + 2 }, (_, n) => `/feeds/moving/${n + 1}.rss`),
  "feed-round-moves-endless": Array.from(
    { length: FEEDS_PER_ROUND + 2 },
    (_, n) => `/feeds/moving-to-endless/${n + 1}.rss`,
  ),
  // A usual round that also gives REHOMED_STATES re-homed episode states the kept podcast's ids (its bound per round
  // and database: src/db/episode-rehomes.ts).
  "feed-round-rehomes": Array.from({ length: FEEDS_PER_ROUND + 2 }, (_, n) => `/feeds/realistic/${300 + n}.rss`),
};

/** REHOMES_PER_ROUND of src/db/episode-rehomes.ts: the states the `feed-round-rehomes` round renames. */
export const REHOMED_STATES = 200;

/**
 * Live episode states of a user of their own that a merge re-homed, as the merges leave them: written under one feed,
 * then moved to another, which the trigger of drizzle/0017 queues for the round to rename.
 */
async function seedRehomedStates(db) {
  const user = `bench-rehomes-${randomUUID()}`;
  const ids = Array.from({ length: REHOMED_STATES }, () => randomUUID());
  await db
    .prepare(
      `INSERT INTO episodes (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
        position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
      SELECT ?1, value, ?2, 'https://podcasts.example.com/rehomed/episode-' || key || '.mp3', 'rehomed-item-' || key,
        key, 3600, 0, 1767225600000 + key, NULL, key + 1, unixepoch(), NULL FROM json_each(?3)`,
    )
    .bind(user, randomUUID(), JSON.stringify(ids))
    .run();
  await db.prepare("UPDATE episodes SET feed_guid = ?2 WHERE user_id = ?1").bind(user, randomUUID()).run();
}
/** The head size of realistic feed n (UTF-8 bytes). */
const realisticBytes = (n) => (n === 0 ? 64 * KIB : (4 + (n % 4) * 4) * KIB);

/** The heads the parse is measured on (by name, as the isolate-only worker is given them). */
export const PARSE_HEADS = {
  "realistic-64k": realisticHead(64 * KIB),
  "dense-64k": denseHead(64 * KIB),
};

/** Starts the bench's feed server on a free loopback port. */
export async function startFeedServer() {
  const documents = new Map();
  const served = (key, make) => {
    if (!documents.has(key)) documents.set(key, make());
    return documents.get(key);
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://feeds.local");
    const path = url.pathname;
    const xml = (body) => res.writeHead(200, { "Content-Type": "application/rss+xml; charset=utf-8" }).end(body);
    const redirect = /^\/redirect\/(30[12378])\/(\d+)(\/.*)$/.exec(path);
    if (redirect) {
      const [, code, hops, target] = redirect;
      const next = Number(hops) > 1 ? `/redirect/${code}/${Number(hops) - 1}${target}` : target;
      return res.writeHead(Number(code), { Location: `${next}${url.search}` }).end();
    }
    const moving = /^\/feeds\/(moving|moving-to-endless)\/(\d+)\.rss$/.exec(path);
    if (moving) {
      // A usual head naming its new URL: a usual feed with the same podcast:guid (every realistic head has one), or
      // a head that never ends.
      const n = Number(moving[2]);
      const named = `http://${req.headers.host}/feeds/${moving[1] === "moving" ? "realistic" : "endless"}/${100 + n}.rss`;
      // The same podcast:guid as the realistic feed it names (a new-feed-url move needs it: docs/API.md §18).
      const head = realisticHead(realisticBytes(n), `Moving ${n}`, realisticGuid(100 + n)).replace(
        "<channel>\n",
        `<channel>\n    <itunes:new-feed-url>${named}</itunes:new-feed-url>\n`,
      );
      return xml(served(path, () => feedOf(head)));
    }
    const realistic = /^\/feeds\/realistic\/(\d+)\.rss$/.exec(path);
    if (realistic) {
      const n = Number(realistic[1]);
      return xml(served(path, () => feedOf(realisticHead(realisticBytes(n), `Podcast ${n}`, realisticGuid(n)))));
    }
    if (/^\/feeds\/dense\/\d+\.rss$/.test(path)) return xml(served("dense", () => feedOf(denseHead(256 * KIB))));
    if (/^\/feeds\/endless\/\d+\.rss$/.test(path)) {
      // A channel head that never ends: the fetch stops at 1 MiB.
      res.writeHead(200, { "Content-Type": "application/rss+xml" });
      res.write(`<?xml version="1.0"?><rss version="2.0" xmlns:itunes="${ITUNES}"><channel><title>Endless</title>`);
      const chunk = "<itunes:keywords>more, and more</itunes:keywords>".repeat(200);
      const more = () => {
        while (!res.destroyed) if (!res.write(chunk)) return res.once("drain", more);
      };
      res.on("error", () => {});
      return more();
    }
    res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

const SCHEDULED_PATH = "/__bench/scheduled";
const FETCHES_PATH = "/__bench/fetches";
const HEADS_PATH = "/__bench/heads";
const SCENARIO_HEADER = "X-Bench-Scenario";
const RECORD_HEADER = "X-Bench-Record";
const JSONAPI = "application/vnd.api+json";
const ATOMIC = `${JSONAPI};ext="https://jsonapi.org/ext/atomic"`;

/** A console line of a run, without what differs between two runs of the same code (times). */
const steady = (line) => {
  try {
    const { durationMs: _d, scheduledTime: _s, ...rest } = JSON.parse(line);
    return JSON.stringify(rest);
  } catch {
    return line;
  }
};

/** The feed round's summary line of a run. */
const roundLine = (lines) => lines.map((line) => JSON.parse(line)).find((line) => line.event === "feed_round");

/** What the report keeps of a recorded scheduled run: its round, its D1 use and what its fetches read. */
function runFigures(at, envelope, round) {
  return {
    at,
    lines: envelope.lines,
    round,
    d1Calls: envelope.use.calls,
    d1Statements: envelope.use.queries,
    d1Sequential: envelope.use.sequential,
    fetches: envelope.fetches.length,
    fetchedBytes: envelope.fetches.reduce(
      (sum, f) => sum + f.chunks.reduce((n, chunk) => n + Buffer.from(chunk, "base64").length, 0),
      0,
    ),
    chunks: envelope.fetches.reduce((sum, f) => sum + f.chunks.length, 0),
    rowsRead: envelope.use.rowsRead,
    rowsWritten: envelope.use.rowsWritten,
  };
}

/**
 * Records each feed scenario once (its own feeds subscribed, every other feed pushed out of the round), checks
 * the recorded round against the round's limits, loads the tapes into the isolate-only worker and checks each
 * replay logs what the real run logged. Returns the recordings (D1, fetches) and what each run asked.
 */
export async function recordFeedRounds({ urls, databases, token, send, log }) {
  const feedServer = await startFeedServer();
  const recordings = {};
  const fetches = {};
  const runs = {};
  try {
    for (const [name, paths] of Object.entries(FEED_SCENARIOS)) {
      // Only this scenario's feeds are due: every other feed (the seeded users', the scenario before) waits.
      for (const db of Object.values(databases)) {
        await db.prepare("UPDATE feeds SET next_fetch_at = ?").bind(Number.MAX_SAFE_INTEGER).run();
      }
      const subscribe = (list) =>
        send(
          urls.app,
          {
            method: "POST",
            path: "/v1/operations",
            headers: { authorization: `Bearer ${token}`, accept: ATOMIC, "content-type": ATOMIC },
            body: JSON.stringify({
              "atomic:operations": list.map((path) => ({
                op: "add",
                data: {
                  type: "subscription",
                  id: randomUUID(),
                  attributes: { feedUrl: `${feedServer.origin}${path}` },
                },
              })),
            }),
          },
          200,
        );
      // The feeds past FEEDS_PER_ROUND first, due a moment later than the others: the round takes the first
      // FEEDS_PER_ROUND of the list (new feeds are due at 0, in no given order among themselves).
      await subscribe(paths.slice(FEEDS_PER_ROUND));
      for (const db of Object.values(databases)) {
        await db.prepare("UPDATE feeds SET next_fetch_at = 1 WHERE next_fetch_at = 0").run();
      }
      await subscribe(paths.slice(0, FEEDS_PER_ROUND));
      if (name === "feed-round-rehomes") await seedRehomedStates(Object.values(databases)[0]);
      const at = Date.now();
      const response = await fetch(new URL(`${SCHEDULED_PATH}?at=${at}`, urls.probe), {
        method: "POST",
        headers: { [RECORD_HEADER]: "1" },
      });
      if (response.status !== 200) throw new Error(`recording ${name}: ${response.status} ${await response.text()}`);
      const envelope = await response.json();
      if (!envelope.ok) throw new Error(`recording ${name}: the scheduled run failed: ${envelope.error}`);
      const round = roundLine(envelope.lines);
      // Usual heads: FEEDS_PER_ROUND fetched. Hostile ones: as many as the round's parse budget takes (src/feeds/round.ts,
      // HEAD_CHARS_PER_FEED and HEAD_CHARS_PER_ROUND), at least one, the others deferred to the next round.
      const usual = name === "feed-round" || name === "feed-round-moves" || name === "feed-round-rehomes";
      const fits = usual
        ? round?.fetched === FEEDS_PER_ROUND &&
          round?.deferred === 0 &&
          (name !== "feed-round-moves" || round?.moved > 0) &&
          (name !== "feed-round-rehomes" || round?.statesRenamed === REHOMED_STATES)
        : round?.fetched >= 1 && round?.fetched + round?.deferred === FEEDS_PER_ROUND;
      if (!fits || round.failed !== 0) {
        throw new Error(`recording ${name}: the round did not do what it should: ${JSON.stringify(round)}`);
      }
      recordings[name] = envelope.calls;
      fetches[name] = envelope.fetches;
      runs[name] = runFigures(at, envelope, round);
      log(
        `bench: ${name} recorded: ${round.fetched} fetched, ${round.deferred} deferred, ${round.moved} moved; ${runs[name].chunks} body chunks of ${Math.round(runs[name].fetchedBytes / 1024)} KiB; ${envelope.fetches.length} fetches + ${envelope.use.calls} D1 calls`,
      );
    }
  } finally {
    await feedServer.close();
  }
  return { recordings, fetches, runs };
}

/** Loads the fetches and heads into the isolate-only worker and checks every replay (the recordings loaded). */
export async function checkFeedReplays({ urls, fetches, runs }) {
  const post = async (path, body) => {
    const response = await fetch(new URL(path, urls.isolate), { method: "POST", body: JSON.stringify(body) });
    if (response.status !== 204) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  };
  await post(FETCHES_PATH, fetches);
  await post(HEADS_PATH, PARSE_HEADS);
  for (const [name, run] of Object.entries(runs)) {
    const response = await fetch(new URL(`${SCHEDULED_PATH}?at=${run.at}`, urls.isolate), {
      method: "POST",
      headers: { [SCENARIO_HEADER]: name },
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`isolate replay of ${name} answered ${response.status}: ${text}`);
    // The isolate-only worker's console keeps each call's arguments as JSON: the one argument is the line.
    const lines = JSON.parse(text).map((entry) => JSON.parse(entry)[0]);
    const replayed = lines.map(steady).sort();
    const recorded = run.lines.map(steady).sort();
    if (JSON.stringify(replayed) !== JSON.stringify(recorded)) {
      throw new Error(`isolate replay of ${name} logged ${replayed.join(" | ")}; the real run ${recorded.join(" | ")}`);
    }
  }
  for (const name of Object.keys(PARSE_HEADS)) {
    const response = await fetch(new URL(`${HEADS_PATH}?head=${name}&times=1`, urls.isolate));
    const facts = await response.json();
    if (response.status !== 200 || !facts?.title) throw new Error(`parse of ${name}: ${JSON.stringify(facts)}`);
  }
}

/** The load targets of the feed figures: each scenario's replay, and the parse requests. */
export function feedTargets({ urls, runs }) {
  const scheduled = (name) => ({
    name,
    expected: [200],
    dynamic: false,
    next: () => ({
      method: "POST",
      path: `${SCHEDULED_PATH}?at=${runs[name].at}`,
      headers: { [SCENARIO_HEADER]: name },
    }),
  });
  const parse = (head, times, saxes = false) => ({
    name: `parse:${head}:${times}${saxes ? ":saxes" : ""}`,
    expected: [200],
    dynamic: false,
    next: () => ({
      method: "GET",
      path: `${HEADS_PATH}?head=${head}&times=${times}${saxes ? "&saxes" : ""}`,
      headers: {},
    }),
  });
  return {
    ...Object.fromEntries(
      Object.keys(runs).map((name) => [
        `isolate:${name}`,
        { base: urls.isolate, endpoint: scheduled(name), sequential: true },
      ]),
    ),
    ...Object.fromEntries(
      Object.keys(PARSE_HEADS).flatMap((head) =>
        [
          [0, false],
          [PARSES_PER_REQUEST, false],
          [PARSES_PER_REQUEST, true],
        ].map(([times, saxes]) => {
          const endpoint = parse(head, times, saxes);
          return [endpoint.name, { base: urls.isolate, endpoint, sequential: true }];
        }),
      ),
    ),
  };
}

/**
 * One sample of requests sent one after another for at least `seconds` (at least one): workerd's CPU over them ÷
 * their number. A scheduled run may take longer than a load sample, and a Cron Trigger's runs never overlap; a
 * load sample of a fixed duration would also leave requests under way at its end, their CPU counted in the next
 * sample (the parse requests', whose figure is a difference of two samples).
 */
async function sequentialSample({ base, endpoint }, seconds, workerdPid) {
  const { method, path, headers } = endpoint.next();
  const url = new URL(path, base);
  const cpuBefore = cpuMs(workerdPid);
  const started = Date.now();
  let responses = 0;
  let errors = 0;
  const statuses = {};
  do {
    const response = await fetch(url, { method, headers });
    await response.text();
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    if (endpoint.expected.includes(response.status)) responses++;
    else errors++;
  } while (Date.now() - started < seconds * 1000);
  const cpuAfter = cpuMs(workerdPid);
  return { responses, errors, statuses, cpuMs: cpuBefore !== undefined ? cpuAfter - cpuBefore : undefined };
}

/** µs of workerd CPU per response of a sample. */
const cpuPerResponse = (sample) =>
  sample.cpuMs !== undefined && sample.responses > 0 ? (sample.cpuMs * 1000) / sample.responses : null;

/**
 * Rounds of samples: the ceiling, each scenario's replay, and each head parsed PARSES_PER_REQUEST times beside a
 * request that parses nothing. Returns the figures: each a median over the rounds.
 */
export async function measureFeeds({ urls, runs, move, settings, workerdPid, ceilingTarget, log }) {
  const targets = { ceiling: ceilingTarget, ...feedTargets({ urls, runs: { ...runs, ...move?.runs } }) };
  const sample = (target, seconds) =>
    target.sequential
      ? sequentialSample(target, seconds, workerdPid)
      : runSample({ ...target, seconds, connections: settings.connections, workerdPid });
  for (const target of Object.values(targets)) await sample(target, settings.warmupSeconds);
  const perRound = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  for (let round = 1; round <= settings.rounds; round++) {
    for (const [name, target] of Object.entries(targets)) {
      const result = await sample(target, settings.isolateSeconds);
      if (result.errors > 0) throw new Error(`${name}: ${result.errors} errors ${JSON.stringify(result.statuses)}`);
      perRound[name].push(cpuPerResponse(result));
      log(
        `  feeds round ${round}/${settings.rounds}  ${name.padEnd(28)} ${String(Math.round(cpuPerResponse(result))).padStart(7)} µs CPU`,
      );
    }
  }
  const parse = Object.fromEntries(
    Object.keys(PARSE_HEADS).map((head) => {
      const perParse = (name) =>
        perRound[name].map((cpu, i) => (cpu - perRound[`parse:${head}:0`][i]) / PARSES_PER_REQUEST);
      const rounds = perParse(`parse:${head}:${PARSES_PER_REQUEST}`);
      const saxes = perParse(`parse:${head}:${PARSES_PER_REQUEST}:saxes`);
      return [
        head,
        {
          bytes: Buffer.byteLength(PARSE_HEADS[head]),
          isolate_cpu_us: Math.round(median(rounds)),
          rounds_us: rounds.map(Math.round),
          // saxes alone on the same head (no handlers): the part of the parse that is the XML tokenizer's.
          saxes_only_us: Math.round(median(saxes)),
          pass: median(rounds) <= PARSE_TARGET_US,
        },
      ];
    }),
  );
  const ceiling = median(perRound.ceiling);
  const figuresOf = (list) =>
    Object.fromEntries(
      Object.entries(list).map(([name, run]) => {
        const cpu = median(perRound[`isolate:${name}`]);
        const subrequests = run.fetches + run.d1Calls;
        return [
          name,
          {
            isolate_cpu_us: Math.round(cpu),
            isolate_cpu_us_rounds: perRound[`isolate:${name}`].map(Math.round),
            // What the run costs without the HTTP request that starts it here (a Cron Trigger has none).
            isolate_cpu_us_above_ceiling: Math.round(cpu - ceiling),
            fetches: run.fetches,
            fetched_bytes: run.fetchedBytes,
            d1_calls: run.d1Calls,
            d1_statements: run.d1Statements,
            d1_sequential: run.d1Sequential,
            rows_read: run.rowsRead,
            rows_written: run.rowsWritten,
            subrequests,
            round: run.round,
            pass: cpu <= FREE_CPU_MS * 1000 && subrequests <= FREE_SUBREQUESTS,
          },
        ];
      }),
    );
  const scenarios = figuresOf(runs);
  return {
    ceiling_cpu_us: Math.round(ceiling),
    feeds_per_round: FEEDS_PER_ROUND,
    scenarios,
    parse,
    ...(move ? { move: moveFigures(move, figuresOf(move.runs)) } : {}),
  };
}

/** The move's figures: its runs (as the scenarios'), the uploads naming A and B, the lookups. */
function moveFigures(move, runs) {
  const list = Object.values(runs);
  const { one_alias: one, many_aliases: many } = move.uploads;
  return {
    subscribers: MOVE_SUBSCRIBERS,
    runs: list.length,
    moved_per_run: list.map((run) => run.round.subscriptionsMoved),
    isolate_cpu_us_per_run: list.map((run) => run.isolate_cpu_us),
    subrequests_per_run: list.map((run) => run.subrequests),
    max_isolate_cpu_us: Math.max(...list.map((run) => run.isolate_cpu_us)),
    max_subrequests: Math.max(...list.map((run) => run.subrequests)),
    per_run: runs,
    uploads: move.uploads,
    lookups: move.lookups,
    pass: {
      runs: list.every((run) => run.pass),
      uploads: one.alias.d1_calls <= one.stored.d1_calls && many.alias.d1_calls <= many.stored.d1_calls,
      lookup: move.lookups.alias_rows_read <= 2 * move.lookups.aliases + LOOKUP_CONSTANT_ROWS,
    },
  };
}

/** The feed targets of results.json (`targets.<name>: {value, limit, pass}`), and how each compares. */
export const FEED_TARGET_DIRECTIONS = {
  feed_move_isolate_cpu_us: "<=",
  feed_move_subrequests: "<=",
  feed_move_alias_upload_d1_calls: "<=",
  feed_alias_lookup_rows_read: "<=",
  feed_round_isolate_cpu_us: "<=",
  feed_round_subrequests: "<=",
  feed_round_hostile_isolate_cpu_us: "<=",
  feed_parse_64kib_isolate_cpu_us: "<=",
};

export function feedTargetsOf(figures) {
  const target = (value, limit) => ({ value, limit, pass: value !== null && value <= limit });
  const scenarios = Object.values(figures.scenarios);
  const hostile = Object.entries(figures.scenarios)
    .filter(([name]) => name !== "feed-round")
    .map(([, s]) => s.isolate_cpu_us);
  const { move } = figures;
  const many = move?.uploads.many_aliases;
  return {
    ...(move
      ? {
          // Every run of the move within the Free plan: the worst run's CPU and subrequests.
          feed_move_isolate_cpu_us: target(move.max_isolate_cpu_us, FREE_CPU_MS * 1000),
          feed_move_subrequests: target(move.max_subrequests, FREE_SUBREQUESTS),
          // An upload naming A after the move, against the same upload naming B (ALIASES_PER_PODCAST aliases).
          feed_move_alias_upload_d1_calls: target(
            Math.max(move.uploads.one_alias.alias.d1_calls, many.alias.d1_calls),
            Math.min(move.uploads.one_alias.stored.d1_calls, many.stored.d1_calls),
          ),
          feed_alias_lookup_rows_read: target(
            Math.max(move.lookups.alias_rows_read, move.lookups.stored_rows_read),
            2 * move.lookups.aliases + LOOKUP_CONSTANT_ROWS,
          ),
        }
      : {}),
    feed_round_isolate_cpu_us: target(figures.scenarios["feed-round"]?.isolate_cpu_us ?? null, FREE_CPU_MS * 1000),
    feed_round_subrequests: target(Math.max(...scenarios.map((s) => s.subrequests)), FREE_SUBREQUESTS),
    feed_round_hostile_isolate_cpu_us: target(hostile.length > 0 ? Math.max(...hostile) : null, FREE_CPU_MS * 1000),
    feed_parse_64kib_isolate_cpu_us: target(
      Math.max(...Object.values(figures.parse).map((p) => p.isolate_cpu_us)),
      PARSE_TARGET_US,
    ),
  };
}

/** The feed section of RESULTS.md. */
export function renderFeeds(figures) {
  const lines = [
    "",
    '## The feed round (bench/README.md, "The feed round")',
    "",
    `A scheduled run (retention and the feed round) replayed in the isolate-only worker; isolate CPU the median over the rounds (the ceiling ${figures.ceiling_cpu_us} µs, whose HTTP request each replay pays too). Free plan: 10 ms of CPU, 50 subrequests.`,
    "",
    "| run | isolate CPU µs | rounds | fetches | D1 calls (statements) | subrequests | fetched | deferred | KiB read | pass |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ...Object.entries(figures.scenarios).map(
      ([name, s]) =>
        `| ${name} | ${s.isolate_cpu_us} | ${s.isolate_cpu_us_rounds.join(", ")} | ${s.fetches} | ${s.d1_calls} (${s.d1_statements}) | ${s.subrequests} | ${s.round.fetched} | ${s.round.deferred} | ${Math.round(s.fetched_bytes / 1024)} | ${s.pass ? "yes" : "**no**"} |`,
    ),
    "",
    `| parse of a 64 KiB head | bytes | isolate CPU µs | rounds | saxes alone µs | ≤ ${PARSE_TARGET_US} µs |`,
    "|---|---:|---:|---|---:|---|",
    ...Object.entries(figures.parse).map(
      ([name, p]) =>
        `| ${name} | ${p.bytes} | ${p.isolate_cpu_us} | ${p.rounds_us.join(", ")} | ${p.pass ? "yes" : "**no**"} |`,
    ),
    "",
    ...(figures.move ? renderMove(figures.move) : []),
  ];
  return lines.join("\n");
}

/** The move's part of the feed section (bench/README.md, "The move of a feed with 10 000 subscribers"). */
function renderMove(move) {
  const { one_alias: one, many_aliases: many, actions } = move.uploads;
  const { lookups } = move;
  const upload = (label, u) =>
    `| ${label} | ${u.alias.d1_calls} (first ${u.alias.first_d1_calls}) | ${u.stored.d1_calls} (first ${u.stored.first_d1_calls}) | ${u.alias.rows_read} | ${u.stored.rows_read} | ${u.alias.d1_calls <= u.stored.d1_calls ? "yes" : "**no**"} |`;
  return [
    `### The move of a feed with ${move.subscribers} subscribers`,
    "",
    `The round learns A -> B from A's 301, then moves A's subscriptions a bounded number a run: ${move.runs} scheduled runs (moved per run: ${move.moved_per_run.join(", ")}). Each run replayed as the scenarios above; every run within 10 ms of CPU and 50 subrequests: ${move.pass.runs ? "yes" : "**no**"}.`,
    "",
    "| run | isolate CPU µs | rounds | fetches | D1 calls (statements) | subrequests | moved | rows read | rows written | pass |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ...Object.entries(move.per_run).map(
      ([name, s]) =>
        `| ${name} | ${s.isolate_cpu_us} | ${s.isolate_cpu_us_rounds.join(", ")} | ${s.fetches} | ${s.d1_calls} (${s.d1_statements}) | ${s.subrequests} | ${s.round.subscriptionsMoved} | ${s.rows_read} | ${s.rows_written} | ${s.pass ? "yes" : "**no**"} |`,
    ),
    "",
    `A gpodder upload of ${actions} \`play\` actions naming A after the move, against the same upload naming B (the stored URL): D1 round trips (the median of ${move.uploads.uploads}, and the first) and rows read.`,
    "",
    "| B's aliases | D1 calls naming A | D1 calls naming B | rows read naming A | rows read naming B | A ≤ B calls |",
    "|---|---:|---:|---:|---:|---|",
    upload("1 (A)", one),
    upload(`${lookups.aliases} (ALIASES_PER_PODCAST)`, many),
    "",
    `The lookup every API makes of a URL (\`subscriptionsNamedBySql\`, one statement) for a podcast with ${lookups.aliases} aliases: ${lookups.alias_rows_read} rows read naming A, ${lookups.stored_rows_read} naming B (one alias: ${lookups.one_alias_rows_read}); target at most 2 × ${lookups.aliases} + ${LOOKUP_CONSTANT_ROWS}: ${move.pass.lookup ? "yes" : "**no**"}.`,
    "",
  ];
}

// ---------------------------------------------------------------------------------------------
// A feed's move (issue 37, point 5; bench/README.md, "The move of a feed with 10 000 subscribers"): the round
// learns A -> B from A's 301 and moves A's subscriptions a bounded number a run (src/db/feed-aliases.ts,
// MOVED_SUBSCRIPTIONS_PER_STATEMENT, at most two statements a run and database); each run is recorded and replayed
// as the scenarios above are. Then what a lookup of an alias costs: a gpodder episode upload naming A against one
// naming B (the stored URL), and the rows one lookup reads for a podcast with ALIASES_PER_PODCAST aliases.

/** Subscribers of the moved feed: the bench user's one (subscribed through the API) and the rest seeded in D1. */
export const MOVE_SUBSCRIBERS = 10_000;
/** Subscriptions seeded per statement (the slices the workerd test spreads over the databases). */
const SEEDED_PER_STATEMENT = 500;
/** The scheduled runs the move may take before the harness calls it broken. */
const MOVE_RUNS_AT_MOST = 100;
/** A Cron Trigger's interval: each recorded run is scheduled this much after the one before. */
const CRON_MS = 10 * 60 * 1000;
/** Episode actions per upload (as the gpodder-episodes-upload row) and uploads per URL (the median reported). */
export const MOVE_UPLOAD_ACTIONS = 100;
const MOVE_UPLOADS = 5;
/**
 * The lookup's rows beyond two per alias (each alias's index entry, the user's subscription probe under it): its
 * fixed part, the sent URL, its alias probe and the canonical URL's own probes, which with one alias read 8 rows
 * here (the bound is the feed-moves test's 2 × ALIASES_PER_PODCAST with that fixed part added).
 */
export const LOOKUP_CONSTANT_ROWS = 8;
const ALIAS_LOOKUP_PATH = "/__bench/alias-lookup";
const MOVE_SCENARIO = "feed-move-10k";
const moveRunName = (n) => `${MOVE_SCENARIO}:${n}`;

const urlKeyOf = (url) => Number.parseInt(createHash("sha256").update(url).digest("hex").slice(0, 12), 16);

/** Active subscriptions with exactly `url`, in all databases. */
async function activeAt(databases, url) {
  let n = 0;
  for (const db of Object.values(databases)) {
    const row = await db
      .prepare("SELECT count(*) AS n FROM subscriptions WHERE url_key = ? AND feed_url = ? AND unsubscribed_at IS NULL")
      .bind(urlKeyOf(url), url)
      .first();
    n += row?.n ?? 0;
  }
  return n;
}

/** A gpodder upload of MOVE_UPLOAD_ACTIONS `play` actions of new episodes of the podcast `podcast`. */
function episodeUpload(credential, podcast) {
  const batch = randomUUID();
  const actions = Array.from({ length: MOVE_UPLOAD_ACTIONS }, (_, i) => ({
    podcast,
    episode: `https://media.example.com/moved/${batch}/${i}.mp3`,
    guid: `urn:uuid:${batch}:${i}`,
    action: "play",
    timestamp: "2026-11-30T10:00:00",
    started: 0,
    position: 60 + i,
    total: 3600,
    device: GPODDER_DEVICE,
  }));
  return gpodderJson(credential, "POST", `/api/2/episodes/${credential.username}.json`, actions);
}

/** One upload through the instrumented worker: its D1 round trips and rows read. */
async function probedUpload(urls, request) {
  const response = await fetch(new URL(request.path, urls.probe), {
    method: request.method,
    headers: request.headers,
    body: request.body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`episode upload answered ${response.status}: ${text.slice(0, 300)}`);
  const header = (name) => Number(response.headers.get(name));
  return { d1Calls: header("x-bench-d1-calls"), rowsRead: header("x-bench-rows-read") };
}

/** Uploads naming `a` and `b` in turn, MOVE_UPLOADS each: the first of each, and the medians. */
async function uploadsNaming(urls, credential, a, b) {
  const of = { a: [], b: [] };
  for (let n = 0; n < MOVE_UPLOADS; n++) {
    of.a.push(await probedUpload(urls, episodeUpload(credential, a)));
    of.b.push(await probedUpload(urls, episodeUpload(credential, b)));
  }
  const figures = (list) => ({
    d1_calls: median(list.map((u) => u.d1Calls)),
    rows_read: median(list.map((u) => u.rowsRead)),
    first_d1_calls: list[0].d1Calls,
    first_rows_read: list[0].rowsRead,
  });
  return { alias: figures(of.a), stored: figures(of.b) };
}

/** The lookup of `url` for the user in every database (bench/instrumented-worker.ts): the rows of the largest. */
async function lookup(urls, userId, url) {
  const response = await fetch(new URL(ALIAS_LOOKUP_PATH, urls.probe), {
    method: "POST",
    body: JSON.stringify({ userId, url }),
  });
  if (response.status !== 200) throw new Error(`alias lookup answered ${response.status}: ${await response.text()}`);
  const answer = await response.json();
  const worst = answer.databases.reduce((a, b) => (b.rowsRead > a.rowsRead ? b : a));
  return { aliasesPerPodcast: answer.aliasesPerPodcast, rowsRead: worst.rowsRead, found: worst.found };
}

/**
 * Records the move of a feed with MOVE_SUBSCRIBERS subscribers, run by run until none is left on A (each run a
 * replay scenario of its own), then the uploads naming A and B, then the same with ALIASES_PER_PODCAST aliases.
 * `user`: the bench user (its id and bearer token); `send(base, request, status)` answers the response text.
 */
export async function recordFeedMove({ urls, databases, user, token, send, log }) {
  const feedServer = await startFeedServer();
  const list = Object.values(databases);
  try {
    const b = `${feedServer.origin}/feeds/realistic/200.rss`;
    const a = `${feedServer.origin}/redirect/301/1/feeds/realistic/200.rss`;
    for (const db of list) {
      await db.prepare("UPDATE feeds SET next_fetch_at = ?").bind(Number.MAX_SAFE_INTEGER).run();
    }
    // The bench user through the API (its gpodder app password too), the others straight into D1, spread over
    // the databases in slices as the workerd test seeds them (a JSON:API subscribe each would take minutes).
    await send(
      urls.app,
      {
        method: "POST",
        path: "/v1/subscriptions",
        headers: { authorization: `Bearer ${token}`, accept: JSONAPI, "content-type": JSONAPI },
        body: JSON.stringify({ data: { type: "subscription", id: randomUUID(), attributes: { feedUrl: a } } }),
      },
      201,
    );
    const minted = JSON.parse(
      await send(urls.app, appPasswordRequest({ [user]: token }, { id: user }, "bench move"), 201),
    ).data.attributes;
    const credential = { username: minted.username, password: minted.password };
    const seededStarted = Date.now();
    for (let n = 1, slice = 0; n < MOVE_SUBSCRIBERS; n += SEEDED_PER_STATEMENT, slice++) {
      const count = Math.min(SEEDED_PER_STATEMENT, MOVE_SUBSCRIBERS - n);
      await list[slice % list.length]
        .prepare(
          `WITH RECURSIVE c(value) AS (SELECT 1 UNION ALL SELECT value + 1 FROM c WHERE value < ?5)
           INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, change_seq, subscribed_seq, received_at, url_key)
           SELECT 'bench-moving-' || (?1 + value), lower(hex(randomblob(16))), ?2, ?3, 1, 1, unixepoch(), ?4 FROM c`,
        )
        .bind(n, a, Date.now(), urlKeyOf(a), count)
        .run();
    }
    if ((await activeAt(databases, a)) !== MOVE_SUBSCRIBERS) {
      throw new Error(`the move's seed went wrong: ${await activeAt(databases, a)} active at A`);
    }
    log(`bench: ${MOVE_SUBSCRIBERS} subscriptions to one feed seeded in ${Date.now() - seededStarted} ms`);

    const recordings = {};
    const fetches = {};
    const runs = {};
    const start = Date.now();
    for (let n = 1; (await activeAt(databases, a)) > 0; n++) {
      if (n > MOVE_RUNS_AT_MOST) throw new Error(`the move of ${MOVE_SUBSCRIBERS} subscribers never ends`);
      // Only A and B are due: in a full run the retention job keys the heavy listener's seeded rows run by run, and
      // each newly keyed URL gets a feed row due at once (an unresolvable host: a failed fetch in the move's runs).
      for (const db of list) {
        await db
          .prepare("UPDATE feeds SET next_fetch_at = ?1 WHERE url_key NOT IN (?2, ?3) AND next_fetch_at < ?1")
          .bind(Number.MAX_SAFE_INTEGER, urlKeyOf(a), urlKeyOf(b))
          .run();
      }
      const at = start + (n - 1) * CRON_MS;
      const response = await fetch(new URL(`${SCHEDULED_PATH}?at=${at}`, urls.probe), {
        method: "POST",
        headers: { [RECORD_HEADER]: "1" },
      });
      if (response.status !== 200) throw new Error(`move run ${n}: ${response.status} ${await response.text()}`);
      const envelope = await response.json();
      if (!envelope.ok) throw new Error(`move run ${n}: the scheduled run failed: ${envelope.error}`);
      const round = roundLine(envelope.lines);
      if (round === undefined || round.failed !== 0 || (n === 1 && round.moved !== 1)) {
        throw new Error(`move run ${n}: the round did not do what it should: ${JSON.stringify(round)}`);
      }
      const name = moveRunName(n);
      recordings[name] = envelope.calls;
      fetches[name] = envelope.fetches;
      runs[name] = runFigures(at, envelope, round);
    }
    const moved = Object.values(runs).reduce((sum, run) => sum + run.round.subscriptionsMoved, 0);
    if (moved !== MOVE_SUBSCRIBERS || (await activeAt(databases, b)) !== MOVE_SUBSCRIBERS) {
      throw new Error(`the move changed ${moved} subscriptions; ${await activeAt(databases, b)} active at B`);
    }
    log(
      `bench: ${MOVE_SCENARIO} recorded: ${Object.keys(runs).length} runs moved ${moved} subscriptions (${Object.values(
        runs,
      )
        .map((run) => run.round.subscriptionsMoved)
        .join(", ")})`,
    );

    // An upload naming the alias against one naming the stored URL, the app's caches warm (sign-in, device).
    for (const request of gpodderWarmUp(credential)) await send(urls.probe, request, 200);
    const oneAlias = await uploadsNaming(urls, credential, a, b);
    const oneAliasLookup = await lookup(urls, user, a);
    // ALIASES_PER_PODCAST aliases of B in every database (A one of them), as the round leaves them (resolved, done).
    const { aliasesPerPodcast } = oneAliasLookup;
    const others = Array.from({ length: aliasesPerPodcast - 1 }, (_, n) => `${a}?alias=${n + 1}`);
    for (const db of list) {
      await db
        .prepare(
          `INSERT OR IGNORE INTO feed_aliases (url_key, url, canonical_url, canonical_key, learned_at, moving)
           SELECT value ->> 0, value ->> 1, ?2, ?3, ?4, 0 FROM json_each(?1)`,
        )
        .bind(JSON.stringify(others.map((url) => [urlKeyOf(url), url])), b, urlKeyOf(b), start)
        .run();
    }
    const aliasCount = await list[0]
      .prepare("SELECT count(*) AS n FROM feed_aliases WHERE canonical_key = ?")
      .bind(urlKeyOf(b))
      .first();
    if (aliasCount?.n !== aliasesPerPodcast) throw new Error(`B has ${aliasCount?.n} aliases`);
    const manyAliases = await uploadsNaming(urls, credential, a, b);
    const lookups = {
      alias: await lookup(urls, user, a),
      stored: await lookup(urls, user, b),
    };
    return {
      recordings,
      fetches,
      runs,
      uploads: { actions: MOVE_UPLOAD_ACTIONS, uploads: MOVE_UPLOADS, one_alias: oneAlias, many_aliases: manyAliases },
      lookups: {
        aliases: aliasesPerPodcast,
        one_alias_rows_read: oneAliasLookup.rowsRead,
        alias_rows_read: lookups.alias.rowsRead,
        stored_rows_read: lookups.stored.rowsRead,
        found: lookups.alias.found,
      },
    };
  } finally {
    await feedServer.close();
  }
}
