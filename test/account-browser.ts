import { inject } from "vitest";
import { type Bindings, ORIGIN, send } from "./helpers";

/**
 * A browser as far as the account pages (docs/API.md §16) need one: cookies per origin, redirects followed
 * between the worker and the local identity provider (test/oidc-providers.global-setup.mjs), forms posted with
 * the page's own `Origin`. Requests to the worker go through `send` (the real worker, the real D1); requests to
 * the provider over the loopback network.
 */

export const oidc = inject("oidc");

/** The worker's settings for the local provider's development client (a public client). */
export function signInBindings(overrides: Partial<Bindings> = {}): Partial<Bindings> {
  return { OIDC_ISSUER: oidc.issuer, OIDC_CLIENT_ID: oidc.clientId, ...overrides } as Partial<Bindings>;
}

export class Browser {
  /** Cookies by origin, then name. */
  readonly cookies = new Map<string, Map<string, string>>();
  /** Headers every request to the worker carries (an address in `CF-Connecting-IP`, say). */
  workerHeaders: Record<string, string> = {};

  constructor(
    readonly bindings: Partial<Bindings> = signInBindings(),
    readonly origin = ORIGIN,
  ) {}

  cookie(name: string, origin = this.origin): string | undefined {
    return this.cookies.get(origin)?.get(name);
  }

  setCookie(name: string, value: string, origin = this.origin): void {
    const jar = this.cookies.get(origin) ?? new Map<string, string>();
    jar.set(name, value);
    this.cookies.set(origin, jar);
  }

  forget(name: string, origin = this.origin): void {
    this.cookies.get(origin)?.delete(name);
  }

  private remember(origin: string, response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const expired = attributes.some((attribute) => /^\s*max-age=0\s*$/i.test(attribute));
      if (expired) this.forget(name, origin);
      else this.setCookie(name, pair.slice(eq + 1).trim(), origin);
    }
  }

  /** One request, no redirect followed; the response's cookies are kept. */
  async request(url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url, this.origin);
    const headers = new Headers(init.headers);
    if (target.origin === this.origin)
      for (const [name, value] of Object.entries(this.workerHeaders)) headers.set(name, value);
    const jar = this.cookies.get(target.origin);
    if (jar && jar.size > 0 && !headers.has("Cookie")) {
      headers.set("Cookie", [...jar].map(([name, value]) => `${name}=${value}`).join("; "));
    }
    const request = new Request(target, { ...init, headers, redirect: "manual" });
    const response =
      target.origin === this.origin ? await send(request, this.bindings) : await fetch(request, { redirect: "manual" });
    this.remember(target.origin, response);
    return response;
  }

  /**
   * Follows redirects from `url` until an answer that is not one, or until the next hop would be the worker's
   * callback when `stopAtCallback` is set (the test then has the callback URL to send, or to tamper with).
   */
  async follow(
    url: string,
    init: RequestInit = {},
    stopAtCallback = false,
  ): Promise<{ response: Response; url: string }> {
    let current = new URL(url, this.origin).href;
    let response = await this.request(current, init);
    for (let hops = 0; hops < 10 && response.status >= 300 && response.status < 400; hops++) {
      const next = new URL(response.headers.get("Location") as string, current);
      if (stopAtCallback && next.origin === this.origin && next.pathname === "/account/callback") {
        return { response, url: next.href };
      }
      current = next.href;
      response = await this.request(current);
    }
    return { response, url: current };
  }

  /** Posts a form from one of the worker's pages (its `Origin`), url-encoded. */
  post(path: string, fields: Record<string, string>, headers: HeadersInit = {}): Promise<Response> {
    return this.request(path, {
      method: "POST",
      headers: { Origin: this.origin, "Content-Type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /**
   * Starts a sign-in at the worker and signs in at the provider's form as `userName`; answers the callback URL
   * the provider sends the browser to, not yet followed.
   */
  async authorizeAt(userName: string, returnTo = "/account"): Promise<string> {
    const start = await this.request(`/account/signin?return_to=${encodeURIComponent(returnTo)}`);
    if (start.status !== 302) throw new Error(`sign-in start answered ${start.status}: ${await start.text()}`);
    return this.authorizeFrom(start.headers.get("Location") as string, userName);
  }

  /**
   * Signs in at the provider from its authorization URL (or presses its `Cancel` when `userName` is undefined);
   * answers the callback URL it redirects to.
   */
  async authorizeFrom(authorizationUrl: string, userName: string | undefined): Promise<string> {
    const form = await this.follow(authorizationUrl, {}, true);
    // Still signed in at the provider (an earlier sign-in of this browser): straight back to the callback.
    if (new URL(form.url).pathname === "/account/callback") return form.url;
    const action = /action="([^"]*\/login)"/.exec(await form.response.text())?.[1];
    if (!action) throw new Error(`the provider showed no sign-in form at ${form.url}`);
    const target = userName === undefined ? action.replace(/\/login$/, "/abort") : action;
    const login = await this.request(new URL(target, form.url).href, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ login: userName ?? "" }).toString(),
    });
    const done = await this.follow(new URL(login.headers.get("Location") as string, form.url).href, {}, true);
    if (new URL(done.url).pathname !== "/account/callback") throw new Error(`no callback: ${done.response.status}`);
    return done.url;
  }

  /** Signs in as `userName` (sub = userName); answers the callback's answer (303 to `returnTo`). */
  async signIn(userName: string, returnTo = "/account"): Promise<Response> {
    return this.request(await this.authorizeAt(userName, returnTo));
  }

  /** A page's HTML, and the anti-forgery token of its forms. */
  async page(path: string): Promise<{ response: Response; html: string; token: string | undefined }> {
    const response = await this.request(path);
    const html = await response.text();
    const token = /name="anti_forgery_token" value="([^"]+)"/.exec(html)?.[1];
    return { response, html, token };
  }
}

/** The session cookie's name over https (the suite's ORIGIN). */
export const SESSION_COOKIE = "__Host-account";
export const ATTEMPT_COOKIE = "__Host-account-signin";
