import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { failureKeyOfAddress, isOverFailureLimit } from "../src/middleware/auth-failures";
import { ORIGIN, send, tokenFor, withinOneRateWindow } from "./helpers";

// docs/API.md §15: failed authentications are counted per IPv4 address or IPv6 /64; they are always 401,
// and an address over the limit has credentials that already failed answered without verifying them again.

const tight = { AUTH_FAILURE_RATE_LIMITER: env.TIGHT_AUTH_FAILURE_RATE_LIMITER }; // 3 failures a minute

// Every test here spends a tight limit: none may straddle the end of a limiter window.
beforeEach(() => withinOneRateWindow());

function attempt(ip: string, authorization: string) {
  return send(
    new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Authorization: authorization, "CF-Connecting-IP": ip } }),
    tight,
  );
}

/** Counts the signature checks the worker makes (tests run in the worker's isolate). */
function countVerifications() {
  return vi.spyOn(crypto.subtle, "verify");
}

afterEach(() => vi.restoreAllMocks());

describe("failureKeyOfAddress", () => {
  it("keys IPv4 addresses as they are", () => {
    expect(failureKeyOfAddress("203.0.113.7")).toBe("203.0.113.7");
    expect(failureKeyOfAddress("203.0.113.8")).toBe("203.0.113.8");
  });

  it("keys IPv6 addresses by their /64, whatever the text form", () => {
    const key = "2001:db8:1:2::/64";
    for (const form of [
      "2001:db8:1:2::1",
      "2001:DB8:1:2::1",
      "2001:0db8:0001:0002:0000:0000:0000:0001",
      "2001:db8:1:2:0:0:0:1",
      "2001:db8:1:2:ffff:ffff:ffff:ffff",
      "2001:db8:1:2:a:b:1.2.3.4",
      "2001:db8:1:2::1%eth0",
    ]) {
      expect(failureKeyOfAddress(form), form).toBe(key);
    }
    expect(failureKeyOfAddress("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(failureKeyOfAddress("2001:db8::")).toBe("2001:db8:0:0::/64");
    expect(failureKeyOfAddress("::")).toBe("0:0:0:0::/64");
    expect(failureKeyOfAddress("::1")).toBe("0:0:0:0::/64");
  });

  it("keys IPv4-mapped IPv6 addresses as their IPv4 address", () => {
    for (const form of ["::ffff:192.0.2.1", "::FFFF:192.0.2.1", "::ffff:c000:201", "0:0:0:0:0:ffff:c000:0201"]) {
      expect(failureKeyOfAddress(form), form).toBe("192.0.2.1");
    }
  });

  it("keeps text that is no address as its own key", () => {
    for (const text of ["unknown", "1:2:3", "1::2::3", "300.1.1.1", "::ffff:1.2.3", "1:2:3:4:5:6:7:8:9"]) {
      expect(failureKeyOfAddress(text), text).toBe(text);
    }
  });
});

describe("an address over the failed-authentication limit", () => {
  it("gets 401 for repeated bad tokens without verifying them again; new tokens are still verified", async () => {
    const ip = "198.51.100.61";
    const bad = `Bearer ${await tokenFor("cache-user", {}, "not-the-secret")}`;
    for (let i = 0; i < 4; i++) expect((await attempt(ip, bad)).status).toBe(401);
    expect(isOverFailureLimit(failureKeyOfAddress(ip))).toBe(true);

    const verifications = countVerifications();
    const cached = await attempt(ip, bad);
    expect(cached.status).toBe(401);
    expect(cached.headers.get("WWW-Authenticate")).toBe('Bearer realm="subscriptions", error="invalid_token"');
    expect(verifications).not.toHaveBeenCalled();

    // Another token is verified (it may be valid: valid credentials are always served).
    const other = `Bearer ${await tokenFor("cache-user-2", {}, "not-the-secret-either")}`;
    expect((await attempt(ip, other)).status).toBe(401);
    expect(verifications).toHaveBeenCalledTimes(1);
    expect((await attempt(ip, `Bearer ${await tokenFor("cache-user")}`)).status).toBe(200);
  });

  it("counts an IPv6 address by its /64: a neighbour in the same /64 is over too, the next /64 is not", async () => {
    const bad = `Bearer ${await tokenFor("v6-user", {}, "not-the-secret")}`;
    for (let i = 0; i < 4; i++) expect((await attempt(`2001:db8:61:1::${i + 1}`, bad)).status).toBe(401);
    const verifications = countVerifications();
    expect((await attempt("2001:DB8:61:1:ffff::7", bad)).status).toBe(401);
    expect(verifications).not.toHaveBeenCalled();
    expect((await attempt("2001:db8:61:2::1", bad)).status).toBe(401);
    expect(verifications).toHaveBeenCalledTimes(1);
  });

  it("never answers from the cache a token that time can cure (nbf ahead)", async () => {
    const ip = "198.51.100.62";
    const notYet = `Bearer ${await tokenFor("nbf-user", { nbf: Math.floor(Date.now() / 1000) + 2 })}`;
    for (let i = 0; i < 4; i++) expect((await attempt(ip, notYet)).status).toBe(401);
    expect(isOverFailureLimit(failureKeyOfAddress(ip))).toBe(true);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 3000);
    try {
      expect((await attempt(ip, notYet)).status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
  });

  it("does not count requests without credentials", async () => {
    const ip = "198.51.100.63";
    for (let i = 0; i < 6; i++) {
      const response = await send(
        new Request(`${ORIGIN}/v1/subscriptions`, { headers: { "CF-Connecting-IP": ip } }),
        tight,
      );
      expect(response.status).toBe(401);
      expect(response.headers.get("WWW-Authenticate")).toBe('Bearer realm="subscriptions"');
    }
    expect(isOverFailureLimit(failureKeyOfAddress(ip))).toBe(false);
  });
});
