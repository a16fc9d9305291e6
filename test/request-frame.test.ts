import { afterEach, describe, expect, it, vi } from "vitest";
import { as, ORIGIN, send } from "./helpers";

// The outer layer of every request (src/middleware/request-frame.ts) does in one step what five
// middleware did: these pin the combinations that only show when several of its parts meet.

const cors = { CORS_ALLOWED_ORIGINS: "https://app.example.com" };

function expectFrameHeaders(response: Response): void {
  expect(response.headers.get("X-Request-Id")).toMatch(/^[\w-]+$/);
  expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
  expect(response.headers.get("Referrer-Policy")).toBe("no-referrer");
  expect(response.headers.get("Cache-Control")).toBe("private, no-store");
}

describe("request frame", () => {
  afterEach(() => vi.restoreAllMocks());

  it("gives a 405 under CORS the CORS headers, Allow, Vary for Origin then Accept, and every frame header", async () => {
    const user = await as("frame-405");
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${user.token}`, Origin: "https://app.example.com" },
      }),
      cors,
    );
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("https://app.example.com");
    expect(response.headers.get("Vary")).toBe("Origin, Accept");
    expectFrameHeaders(response);
  });

  it("gives a preflight, answered before authentication, every frame header", async () => {
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        method: "OPTIONS",
        headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "PATCH" },
      }),
      cors,
    );
    expect(response.status).toBe(204);
    expect(response.headers.get("Access-Control-Allow-Methods")).toContain("PATCH");
    expectFrameHeaders(response);
  });

  it("names a user by the same hash on its first request (digest computed) and later ones (digest cached)", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const first = await as(`frame-log-${crypto.randomUUID()}`);
    await first.get("/v1/subscriptions");
    await first.get("/v1/subscriptions");
    const other = await as(`frame-log-${crypto.randomUUID()}`);
    await other.get("/v1/subscriptions");
    const users = lines.map((line) => JSON.parse(line).user as string);
    expect(users[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(users[1]).toBe(users[0]);
    expect(users[2]).not.toBe(users[0]);
  });
});
