import * as oauth from "oauth4webapi";
import { type AppBindings, configured } from "../env";
import { ApiError } from "../jsonapi";

/**
 * The account pages' OpenID Connect client (docs/API.md §16): authorization code flow with PKCE (S256), `state`
 * and `nonce`, against OIDC_ISSUER. Every protocol step is oauth4webapi's (discovery, the authorization response,
 * the code exchange, the ID token's claims and its signature by the issuer's `jwks_uri`); this module only
 * chooses the settings, bounds the time each request may take, and turns the library's failures into the
 * service's answers: the issuer out of reach or malformed is a 503, anything wrong with one sign-in a 400.
 */

/** The scopes asked for: `openid` makes it OpenID Connect; `profile` and `email` name the person on the page. */
const SCOPE = "openid profile email";
/** How long a request to the issuer may take (docs/API.md §16). */
export const ISSUER_TIMEOUT_MS = 5000;
/** The discovery document is kept at most this long per isolate (oauth4webapi keeps the keys 5 minutes). */
export const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** What a 503 asks the browser to wait before trying again. */
const RETRY_AFTER_SECONDS = 30;

export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret?: string;
  timeoutMs: number;
}

/** One sign-in in progress: what the callback checks the issuer's answer against. */
export interface SignInAttempt {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Who signed in: the ID token's `sub`, and the name the page shows. */
export interface SignedInPerson {
  sub: string;
  name: string;
}

/** The issuer is out of reach or answered something that is not OpenID Connect: try again later (503). */
export function issuerUnavailable(detail: string): ApiError {
  return new ApiError({
    status: 503,
    title: "Sign-in is unavailable",
    detail,
    headers: { "Retry-After": String(RETRY_AFTER_SECONDS) },
  });
}

/** One sign-in went wrong (400): nothing was created, and the page offers to sign in again. */
export class SignInFailed extends Error {
  constructor(detail: string) {
    super(detail);
    this.name = "SignInFailed";
  }
}

function misconfigured(detail: string): ApiError {
  return new ApiError({ status: 500, title: "Sign-in is misconfigured", detail });
}

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** True for a URL on a loopback host: the only place where plain http is accepted (local development). */
export function isLoopback(url: URL): boolean {
  return LOOPBACK_HOST.test(url.hostname);
}

function timeoutOf(env: AppBindings): number {
  const value = Number(configured(env.OIDC_TIMEOUT_MS));
  return Number.isInteger(value) && value > 0 ? Math.min(value, ISSUER_TIMEOUT_MS) : ISSUER_TIMEOUT_MS;
}

/**
 * The settings, or the page that says what is missing: no OIDC_ISSUER is 503 ("not configured"), an issuer that
 * is no https URL (http only on a loopback host), a missing client id, or an AUTH_ISSUER naming another issuer
 * (the API and the pages would then name different people by one `sub`) are configuration errors (500).
 */
export function oidcSettings(env: AppBindings): OidcSettings {
  const issuerText = configured(env.OIDC_ISSUER);
  if (!issuerText) {
    throw new ApiError({
      status: 503,
      title: "Sign-in is not configured",
      detail:
        "Sign-in is not configured on this service: its operator has not set OIDC_ISSUER (docs/identity-providers.md).",
    });
  }
  const apiIssuer = configured(env.AUTH_ISSUER);
  if (apiIssuer !== undefined && apiIssuer !== issuerText) {
    throw misconfigured(
      `AUTH_ISSUER (${apiIssuer}) differs from OIDC_ISSUER (${issuerText}): the API's tokens and the account pages would name different people. The operator must set both to the same issuer.`,
    );
  }
  let issuer: URL;
  try {
    issuer = new URL(issuerText);
  } catch {
    throw misconfigured("OIDC_ISSUER is not a URL.");
  }
  if (issuer.protocol !== "https:" && !(issuer.protocol === "http:" && isLoopback(issuer))) {
    throw misconfigured("OIDC_ISSUER must be an https URL (plain http only on a loopback host, for development).");
  }
  const clientId = configured(env.OIDC_CLIENT_ID);
  if (!clientId) throw misconfigured("OIDC_ISSUER is set but OIDC_CLIENT_ID is not.");
  const clientSecret = configured(env.OIDC_CLIENT_SECRET);
  return { issuer, clientId, ...(clientSecret ? { clientSecret } : {}), timeoutMs: timeoutOf(env) };
}

/** The options every request to the issuer carries: the time limit, and plain http only on loopback. */
function requestOptions(settings: OidcSettings) {
  return {
    signal: () => AbortSignal.timeout(settings.timeoutMs),
    [oauth.allowInsecureRequests]: settings.issuer.protocol === "http:",
  };
}

/** Discovery documents per issuer, with when they were fetched (bounded: a deployment has one issuer). */
const discovered = new Map<string, { server: oauth.AuthorizationServer; at: number }>();
const MAX_ISSUERS = 8;

/** Forgets every discovery document this isolate holds (tests that change what an issuer serves). */
export function forgetDiscovery(): void {
  discovered.clear();
}

const isAbort = (err: unknown) => err instanceof DOMException && /abort|timeout/i.test(err.name);

/**
 * Whether the issuer could not be heard out (a 503: try again), not whether it refused: the network failed (what a
 * fetch throws before any answer: a TypeError in the standard, a plain Error in workerd for a refused connection or
 * a name that does not resolve), or the time ran out, also while its answer's body was still arriving, which
 * oauth4webapi reports as a body it failed to parse, caused by the abort. Found by the soak under load: a slow token
 * endpoint read as a refused sign-in (400, counted toward the address's failure limit).
 */
export function isIssuerOutOfReach(err: unknown): boolean {
  if (isAbort(err) || (err instanceof Error && isAbort(err.cause))) return true;
  // oauth4webapi's errors, a DOMException of Web Crypto and our own all have classes of their own.
  return err instanceof TypeError || (err instanceof Error && err.constructor === Error);
}

/** The issuer's discovery document, fetched at most once an hour per isolate; 503 when it cannot be had. */
async function authorizationServer(settings: OidcSettings, now = Date.now()): Promise<oauth.AuthorizationServer> {
  const key = settings.issuer.href;
  const known = discovered.get(key);
  if (known && now - known.at < DISCOVERY_TTL_MS) return known.server;
  let server: oauth.AuthorizationServer;
  try {
    const response = await oauth.discoveryRequest(settings.issuer, { algorithm: "oidc", ...requestOptions(settings) });
    server = await oauth.processDiscoveryResponse(settings.issuer, response);
  } catch (err) {
    throw issuerUnavailable(
      err instanceof oauth.OperationProcessingError
        ? "The identity provider's discovery document is not usable. Nothing was changed; try again later."
        : "The identity provider could not be reached. Nothing was changed; try again in a moment.",
    );
  }
  if (!server.authorization_endpoint || !server.token_endpoint || !server.jwks_uri) {
    throw issuerUnavailable(
      "The identity provider's discovery document lacks an authorization endpoint, a token endpoint or keys.",
    );
  }
  if (discovered.size >= MAX_ISSUERS) discovered.delete(discovered.keys().next().value as string);
  discovered.set(key, { server, at: now });
  return server;
}

function client(settings: OidcSettings): oauth.Client {
  return { client_id: settings.clientId };
}

function clientAuthentication(settings: OidcSettings): oauth.ClientAuth {
  // A confidential client sends its secret with HTTP Basic (the method every provider must accept, RFC 6749
  // §2.3.1); without a secret it is a public client, and PKCE alone binds the code to this browser.
  return settings.clientSecret ? oauth.ClientSecretBasic(settings.clientSecret) : oauth.None();
}

/** A new sign-in: where to send the browser, and the attempt the callback will check against. */
export async function beginSignIn(
  settings: OidcSettings,
  redirectUri: string,
): Promise<{ location: URL; attempt: SignInAttempt }> {
  const server = await authorizationServer(settings);
  const attempt = {
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
    codeVerifier: oauth.generateRandomCodeVerifier(),
  };
  const location = new URL(server.authorization_endpoint as string);
  location.searchParams.set("client_id", settings.clientId);
  location.searchParams.set("redirect_uri", redirectUri);
  location.searchParams.set("response_type", "code");
  location.searchParams.set("scope", SCOPE);
  location.searchParams.set("state", attempt.state);
  location.searchParams.set("nonce", attempt.nonce);
  location.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(attempt.codeVerifier));
  location.searchParams.set("code_challenge_method", "S256");
  return { location, attempt };
}

/** The name the page shows: the ID token's `name`, `preferred_username` or `email`, else `sub`. */
function displayName(claims: oauth.IDToken): string {
  for (const claim of ["name", "preferred_username", "email"]) {
    const value = claims[claim];
    if (typeof value === "string" && value.trim() !== "" && value.isWellFormed()) return value.trim().slice(0, 200);
  }
  return claims.sub;
}

/** Why the library refused one sign-in, in words for the page. */
function failureOf(err: unknown): SignInFailed {
  if (err instanceof oauth.AuthorizationResponseError) {
    return new SignInFailed(
      `The identity provider did not sign you in (${err.error}${err.error_description ? `: ${err.error_description}` : ""}).`,
    );
  }
  if (err instanceof oauth.ResponseBodyError) {
    return new SignInFailed(`The identity provider refused the sign-in code (${err.error}).`);
  }
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    const error = err.cause.map((challenge) => challenge.parameters.error).find(Boolean) ?? `status ${err.status}`;
    return new SignInFailed(`The identity provider refused the sign-in code (${error}).`);
  }
  if (err instanceof oauth.OperationProcessingError || err instanceof oauth.UnsupportedOperationError) {
    return new SignInFailed(`The identity provider's answer failed a check: ${err.message}.`);
  }
  return new SignInFailed("The sign-in could not be completed.");
}

/**
 * Completes a sign-in from the callback's parameters: the authorization response is checked against the
 * attempt's `state` (and the issuer's `iss` when it sends one), the code is exchanged with the PKCE verifier,
 * and the ID token's `iss`, `aud`, `exp`, `iat` and `nonce` are checked, then its signature with the issuer's
 * keys. Throws SignInFailed (400) for anything about this sign-in, a 503 when the issuer cannot be reached.
 */
export async function completeSignIn(
  settings: OidcSettings,
  redirectUri: string,
  callback: URL,
  attempt: SignInAttempt,
): Promise<SignedInPerson> {
  const server = await authorizationServer(settings);
  const options = requestOptions(settings);
  let claims: oauth.IDToken | undefined;
  try {
    const parameters = oauth.validateAuthResponse(server, client(settings), callback, attempt.state);
    const response = await oauth.authorizationCodeGrantRequest(
      server,
      client(settings),
      clientAuthentication(settings),
      parameters,
      redirectUri,
      attempt.codeVerifier,
      options,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(server, client(settings), response, {
      expectedNonce: attempt.nonce,
      requireIdToken: true,
    });
    // The token endpoint's TLS already vouches for the issuer; the contract asks for the signature too.
    await oauth.validateApplicationLevelSignature(server, response, options);
    claims = oauth.getValidatedIdTokenClaims(tokens);
  } catch (err) {
    if (isIssuerOutOfReach(err)) {
      throw issuerUnavailable("The identity provider could not be reached. Nothing was changed; sign in again.");
    }
    throw failureOf(err);
  }
  if (!claims) throw new SignInFailed("The identity provider sent no ID token.");
  return { sub: claims.sub, name: displayName(claims) };
}
