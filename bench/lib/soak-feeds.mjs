// The soak's feed server (bench/soak.mjs): node:http on loopback, so the worker fetches it only with
// FEED_FETCH_ALLOW_PRIVATE=true. Every soak subscription's feedUrl is one of its URLs; each answers by its path
// alone (bench/lib/soak-model.mjs, feedVariant and feedTitle): a small RSS 2.0 channel, a 503 or a 410. It records
// every URL it answered, which is how the model learns what a feed round fetched.
import { createServer } from "node:http";
import { feedTitle, feedVariant } from "./soak-model.mjs";

const xmlText = (text) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** The channel head of a soak feed: what a host serves before its first item. */
function feedDocument(url) {
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
  <channel>
    <title>${xmlText(feedTitle(url))}</title>
    <link>https://soak.example.com/</link>
    <description>A podcast of the soak.</description>
    <itunes:author>The soak</itunes:author>
    <item><title>Episode 1</title><enclosure url="https://cdn.soak.test/1.mp3" type="audio/mpeg" length="1"/></item>
  </channel>
</rss>
`;
}

/** Starts the server on a free loopback port: its origin, the URLs it answered (url -> count), close(). */
export async function startSoakFeeds() {
  const answered = new Map();
  const server = createServer((req, res) => {
    const url = `${origin}${req.url}`;
    answered.set(url, (answered.get(url) ?? 0) + 1);
    const variant = feedVariant(url);
    if (variant === "gone") return res.writeHead(410, { "Content-Type": "text/plain" }).end("gone");
    if (variant === "failing") return res.writeHead(503, { "Content-Type": "text/plain" }).end("unavailable");
    res.writeHead(200, { "Content-Type": "application/rss+xml; charset=utf-8" }).end(feedDocument(url));
  });
  // As scripts/dev-oidc-provider.mjs says: a connection Node closes after 5 s idle, reused by workerd's pool at that
  // moment, fails the round's fetch (a feed the model expects read then shows "failing").
  server.keepAliveTimeout = 0;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    answered,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
