import type { FC } from "hono/jsx";
import type { SignedInAccount } from "../middleware/account-session";
import type { LoginFlowSummary } from "../nextcloud/login-flow";
import { dateTime, minutesFrom } from "./format";
import { AntiForgeryField, ChosenName, Layout, SERVICE_NAME } from "./layout";

/**
 * The grant page of Nextcloud's Login Flow v2 (docs/API.md §17), where a signed-in person lets an app (AntennaPod's
 * "Nextcloud" option) receive an app password. The app's name is whatever the flow's starter sent as its
 * User-Agent: it is shown as text (hono/jsx escapes it), always beside what the starter cannot choose, when and
 * from which address the flow started, since anyone can start a flow and send the link to someone else.
 */

/** The app's name as the starter gave it: set apart, and broken anywhere so that 100 characters fit 360 px. */
const AppName: FC<{ name: string }> = ({ name }) => (
  <strong class="app-name">
    <ChosenName name={name} />
  </strong>
);

/** `GET <login>` signed in: who asks, when and from where, the warning, and the two buttons. */
export const GrantPage: FC<{
  account: SignedInAccount;
  flow: LoginFlowSummary;
  /** Where the two forms post: `<login>/grant` and `<login>/deny`. */
  action: string;
  /** The address this page was asked from, for the person to compare with the flow's. */
  browserAddress: string;
  now: number;
}> = ({ account, flow, action, browserAddress, now }) => (
  <Layout title="Grant access to your podcasts?" account={account}>
    <h1>Grant access to your podcasts?</h1>
    <p class="lead">
      An app that calls itself <AppName name={flow.appName} /> asks to sync with the {SERVICE_NAME} account of{" "}
      <strong>
        <ChosenName name={account.name} />
      </strong>
      : it could read and change your subscriptions and listening progress.
    </p>
    <dl class="facts">
      <div>
        <dt>App (as it names itself)</dt>
        <dd>
          <AppName name={flow.appName} />
        </dd>
      </div>
      <div>
        <dt>Sign-in started</dt>
        <dd>
          {dateTime(flow.startedAt)} ({minutesFrom(flow.startedAt, now)})
        </dd>
      </div>
      <div>
        <dt>Started from address</dt>
        <dd>
          <code>{flow.startedFrom}</code>
        </dd>
      </div>
      <div>
        <dt>This browser's address</dt>
        <dd>
          <code>{browserAddress}</code>
        </dd>
      </div>
      <div>
        <dt>This link works until</dt>
        <dd>
          {dateTime(flow.expiresAt)} ({minutesFrom(flow.expiresAt, now)})
        </dd>
      </div>
    </dl>
    <p class="notice" id="warning">
      Grant access only to an app you have just started signing in from yourself (in AntennaPod: the "Nextcloud" option,
      with this service's address). If you did not just do that, or the time or the address is not yours, press{" "}
      <strong>Deny</strong>: whoever sent you this link would otherwise get into your account.
    </p>
    <div class="decision">
      <form method="post" action={`${action}/grant`}>
        <AntiForgeryField account={account} />
        <button type="submit" aria-describedby="warning">
          Grant access
        </button>
      </form>
      <form method="post" action={`${action}/deny`}>
        <AntiForgeryField account={account} />
        <button type="submit" class="secondary">
          Deny
        </button>
      </form>
    </div>
    <p class="hint">
      Granting creates an app password named after the app. It is listed under App passwords on{" "}
      <a href="/account">your account</a>, where Revoke stops the app at any time.
    </p>
  </Layout>
);

/** The answer to `Grant access`: the app has its password; back to the app. */
export const GrantedPage: FC<{ account: SignedInAccount; appName: string }> = ({ account, appName }) => (
  <Layout title="Access granted" account={account}>
    <h1>Access granted</h1>
    <p class="notice success" role="status">
      <AppName name={appName} /> can now sync with your account. You may close this page and return to the app: it
      finishes signing in by itself within a few seconds.
    </p>
    <p>
      Its app password is listed under App passwords on <a href="/account">your account</a>, named after the app; press
      Revoke there to stop it.
    </p>
  </Layout>
);

/** The answer to `Deny`: the flow is over and its app receives nothing. */
export const DeniedPage: FC<{ account: SignedInAccount; appName: string }> = ({ account, appName }) => (
  <Layout title="Access denied" account={account}>
    <h1>Access denied</h1>
    <p class="notice" role="status">
      <AppName name={appName} /> was not given access, and this link no longer works. Nothing of your account was
      shared.
    </p>
    <p>
      If it was your own app after all, start signing in from the app again. <a href="/account">Back to your account</a>
    </p>
  </Layout>
);
