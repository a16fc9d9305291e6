// A local feed server (node:http) for the feed tests of both suites: documents shaped like real podcast feeds and
// every way a feed host misbehaves (docs/API.md §18). The internet is never reached: every feed a test subscribes
// to is served here, on a loopback port (so the worker fetches it only with FEED_FETCH_ALLOW_PRIVATE=true).
//
// Every request is recorded by its path and query: tests make their URLs unique with a query (`?t=...`), which
// the documents ignore, and read `/_requests?url=<path and query>` for what arrived (count, headers).
//
// `POST /_define/<name>` (a JSON NamedFeed) defines, or redefines, what `/named/<name>` answers: a feed that says
// where it moved and which podcast it is, a redirect or an error. Tests of feed moves build chains and cycles of them.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { podcastGuidSync } from "../src/podcast-guid";
import {
  atomFeed,
  DOCTYPE,
  ENTITIES,
  HTML_PAGE,
  hostileFeed,
  ITUNES,
  type NamedFeed,
  NOT_XML,
  namedFeed,
  techFeed,
} from "./feed-documents";

/** What each path serves; `version` is the conditional feed's current version. */
interface ServerState {
  requests: Map<string, { method?: string; headers: IncomingMessage["headers"] }[]>;
  versions: Map<string, number>;
  named: Map<string, NamedFeed>;
  hanging: Set<ServerResponse>;
}

function serve(req: IncomingMessage, res: ServerResponse, url: URL, state: ServerState): unknown {
  const path = url.pathname;
  const xml = (body: string, headers: Record<string, string> = {}) =>
    res.writeHead(200, { "Content-Type": "application/rss+xml; charset=utf-8", ...headers }).end(body);
  const redirect = /^\/redirect\/(30[12378])\/(\d+)(\/.*)$/.exec(path);
  if (redirect) {
    const [, code, hops, target] = redirect;
    const next = Number(hops) > 1 ? `/redirect/${code}/${Number(hops) - 1}${target}` : target;
    return res.writeHead(Number(code), { Location: `${next}${url.search}` }).end();
  }
  const named = /^\/named\/([\w-]+)$/.exec(path);
  if (named) {
    const definition = state.named.get(named[1]);
    if (!definition) return res.writeHead(404, { "Content-Type": "text/plain" }).end("not defined");
    if (definition.location) return res.writeHead(definition.status ?? 301, { Location: definition.location }).end();
    if (definition.status) return res.writeHead(definition.status, { "Content-Type": "text/plain" }).end("status");
    return xml(namedFeed(definition));
  }
  const status = /^\/status\/(\d{3})$/.exec(path);
  if (status) return res.writeHead(Number(status[1]), { "Content-Type": "text/plain" }).end("status");
  const conditional = /^\/conditional\/([\w-]+)$/.exec(path);
  if (conditional) {
    const version = state.versions.get(conditional[1]) ?? 1;
    const etag = `"v${version}"`;
    if (req.headers["if-none-match"] === etag) return res.writeHead(304, { ETag: etag }).end();
    // A podcast of its own per name (its own podcast:guid): a user subscribed to two of them, or to one and the tech
    // feed, has two podcasts, not one to merge (docs/API.md §18).
    return xml(
      techFeed(`Conditional ${conditional[1]} v${version}`, podcastGuidSync(`conditional/${conditional[1]}`)),
      {
        ETag: etag,
        "Last-Modified": new Date(Date.UTC(2026, 10, version)).toUTCString(),
      },
    );
  }
  switch (path) {
    case "/redirect-ftp":
      return res.writeHead(301, { Location: "ftp://feeds.example.com/feed.rss" }).end();
    case "/feeds/tech.rss":
      return xml(techFeed());
    case "/feeds/atom.xml":
      return xml(atomFeed, { "Content-Type": "application/atom+xml" });
    case "/feeds/hostile.rss":
      return xml(hostileFeed);
    case "/feeds/doctype.rss":
      return xml(DOCTYPE);
    case "/feeds/entities.rss":
      return xml(ENTITIES);
    case "/feeds/html":
      return res.writeHead(200, { "Content-Type": "text/html" }).end(HTML_PAGE);
    case "/feeds/text":
      return res.writeHead(200, { "Content-Type": "text/plain" }).end(NOT_XML);
    case "/feeds/huge-title.rss": {
      // A 10 MB title: the fetch reads 1 MiB of it and drops the rest.
      res.writeHead(200, { "Content-Type": "application/rss+xml" });
      res.write(`<?xml version="1.0"?><rss version="2.0"><channel><title>`);
      const chunk = "Long title ".repeat(10_000);
      let sent = 0;
      const more = () => {
        while (sent < 10_000_000) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once("drain", more);
        }
        res.end("</title></channel></rss>");
      };
      return more();
    }
    case "/feeds/endless.rss": {
      // A channel head that never ends (no item, no end): the fetch stops at 1 MiB and keeps what it read.
      res.writeHead(200, { "Content-Type": "application/rss+xml" });
      res.write(`<?xml version="1.0"?><rss version="2.0" xmlns:itunes="${ITUNES}"><channel><title>Endless</title>`);
      const chunk = `<itunes:keywords>more, and more</itunes:keywords>`.repeat(200);
      const more = () => {
        while (!res.destroyed) if (!res.write(chunk)) return res.once("drain", more);
      };
      res.on("close", () => {});
      return more();
    }
    case "/hang":
      // Accepts the request and never answers.
      state.hanging.add(res);
      return;
    case "/slow-body": {
      // Answers at once, then a byte every 200 ms, never finishing.
      res.writeHead(200, { "Content-Type": "application/rss+xml" });
      res.write(`<?xml version="1.0"?><rss version="2.0"><channel><title>Slow`);
      const timer = setInterval(() => res.write(" "), 200);
      res.on("close", () => clearInterval(timer));
      return;
    }
    default:
      return res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
  }
}

/** Starts the server on a free loopback port: its origin, what it recorded, and a way to change a feed. */
export async function startFeedServer(): Promise<{ origin: string; close: () => Promise<void> }> {
  const state: ServerState = { requests: new Map(), versions: new Map(), named: new Map(), hanging: new Set() };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://feeds.local");
    if (url.pathname === "/_requests") {
      const seen = state.requests.get(url.searchParams.get("url") ?? "") ?? [];
      return res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(seen));
    }
    const bump = /^\/_version\/([\w-]+)$/.exec(url.pathname);
    if (bump && req.method === "POST") {
      state.versions.set(bump[1], (state.versions.get(bump[1]) ?? 1) + 1);
      return res.writeHead(204).end();
    }
    const define = /^\/_define\/([\w-]+)$/.exec(url.pathname);
    if (define && req.method === "POST") {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        state.named.set(define[1], JSON.parse(body) as NamedFeed);
        res.writeHead(204).end();
      });
      return;
    }
    const key = `${url.pathname}${url.search}`;
    const seen = state.requests.get(key) ?? [];
    seen.push({ method: req.method, headers: req.headers });
    state.requests.set(key, seen);
    serve(req, res, url, state);
  });
  // As scripts/dev-oidc-provider.mjs says: a connection Node closes after 5 s idle, reused by workerd's pool at that
  // moment, fails the round's fetch (the feed then "failing" in a test that expects it read) with workerd's stacks.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of state.hanging) res.destroy();
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
