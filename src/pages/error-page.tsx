import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../env";
import type { ErrorObject } from "../jsonapi";
import { Layout, renderPage, SERVICE_NAME } from "./layout";

/**
 * A failure on a page (docs/API.md §16), as a page: what went wrong in words, never a stack trace, and the way
 * on: `Sign in` again when signing in failed or the session ended, else back to the account (and, for a page not
 * found, to the start page `/`). Rendered by
 * app.onError (middleware/errors.ts) for every error on a page path, whoever raised it.
 */
export function pageErrorResponse(
  c: Context<AppEnv>,
  status: number,
  errors: ErrorObject[],
  headers: Record<string, string> = {},
): Promise<Response> {
  const [first] = errors;
  const offerSignIn = errors.some((error) => error.meta?.offerSignIn === true);
  const account = c.get("account");
  const page = (
    <Layout title={first?.title ?? "Error"} account={account}>
      <h1>{first?.title ?? "Error"}</h1>
      {errors.map((error) => (
        <p class="problem">{error.detail}</p>
      ))}
      <p class="actions">
        {offerSignIn ? (
          <a class="button" href="/account/signin?return_to=%2Faccount">
            Sign in
          </a>
        ) : (
          <a href="/account">Back to your account</a>
        )}
        {status === 404 ? (
          <>
            {" "}
            · <a href="/">{SERVICE_NAME}'s start page</a>
          </>
        ) : null}
      </p>
      {status >= 500 ? <p class="hint">Status {status}. If this persists, tell the service's operator.</p> : null}
    </Layout>
  );
  return renderPage(c, page, status as ContentfulStatusCode, headers);
}
