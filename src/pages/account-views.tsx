import type { FC } from "hono/jsx";
import type { AccountOverview } from "../db/account-pages";
import { MAX_APP_PASSWORDS, type StoredAppPassword } from "../db/app-passwords";
import { MAX_DEVICES } from "../db/devices";
import { MAX_STORED_EPISODES } from "../db/episodes";
import { MAX_URL_BYTES } from "../db/storage";
import { MAX_STORED_SUBSCRIPTIONS } from "../db/subscriptions";
import type { SignedInAccount } from "../middleware/account-session";
import { MAX_LABEL_CHARACTERS } from "../resources/app-password";
import { bytes, count, dateTime, number } from "./format";
import { AntiForgeryField, ChosenName, Layout, ScreenReaderOnly, SERVICE_NAME } from "./layout";

/** The home page: what this is, `Sign in`, and where developers go. */
export const HomePage: FC = () => (
  <Layout title="Keep your podcasts in step">
    <h1>Keep your podcasts in step on every device</h1>
    <p class="lead">
      {SERVICE_NAME} remembers which podcasts you follow and how far you got in each episode, and hands that to every
      podcast app you use: gPodder on the laptop, AntennaPod or Kasts on the phone, and any app that syncs with
      gpodder.net.
    </p>
    <p class="actions">
      <a class="button" href="/account/signin?return_to=%2Faccount">
        Sign in
      </a>
    </p>
    <p>
      You sign in with your account at this service's identity provider; once in, you connect an app by creating an app
      password for it, and can see, export and erase everything the service keeps for you.
    </p>
    <h2>For app developers</h2>
    <p>
      The service's API (JSON:API, with the gpodder.net API beside it) is described at <a href="/docs">/docs</a>.
    </p>
  </Layout>
);

/** `GET /account` signed out. */
export const SignedOutPage: FC<{ signedOut: boolean }> = ({ signedOut }) => (
  <Layout title="Your account">
    <h1>Your account</h1>
    {signedOut ? (
      <p class="notice" role="status">
        You are signed out of {SERVICE_NAME}. (You may still be signed in at your identity provider.)
      </p>
    ) : null}
    <p>Sign in to connect your podcast apps and to see what this service keeps for you.</p>
    <p class="actions">
      <a class="button" href="/account/signin?return_to=%2Faccount">
        Sign in
      </a>
    </p>
  </Layout>
);

const Full: FC<{ full: boolean; what: string }> = ({ full, what }) =>
  full ? <strong class="full">Full: {what}</strong> : null;

const Holdings: FC<{ overview: AccountOverview }> = ({ overview }) => {
  const { holdings, appPasswords, devices } = overview;
  const percent = (holdings.urlBytes / MAX_URL_BYTES) * 100;
  return (
    <section aria-labelledby="holdings">
      <h2 id="holdings">What your account holds</h2>
      <dl class="holdings">
        <div>
          <dt>Subscriptions</dt>
          <dd>
            <a href="/account/subscriptions">{count(holdings.subscriptions, "podcast", "podcasts")}</a>{" "}
            <Full
              full={holdings.subscriptions >= MAX_STORED_SUBSCRIPTIONS}
              what={`at most ${number(MAX_STORED_SUBSCRIPTIONS)}; unsubscribe from some to add others.`}
            />
          </dd>
        </div>
        <div>
          <dt>Listening progress</dt>
          <dd>
            <a href="/account/progress">{count(holdings.episodes, "episode", "episodes")}</a>{" "}
            <Full
              full={holdings.episodes >= MAX_STORED_EPISODES}
              what={`at most ${number(MAX_STORED_EPISODES)}; the oldest forgotten ones are recycled first.`}
            />
          </dd>
        </div>
        <div>
          <dt>Devices</dt>
          <dd>
            {count(devices.length, "device", "devices")}{" "}
            <Full full={devices.length >= MAX_DEVICES} what={`at most ${MAX_DEVICES}.`} />
          </dd>
        </div>
        <div>
          <dt>App passwords</dt>
          <dd>
            {count(appPasswords.length, "app password", "app passwords")}{" "}
            <Full
              full={appPasswords.length >= MAX_APP_PASSWORDS}
              what={`at most ${MAX_APP_PASSWORDS}; revoke one first.`}
            />
          </dd>
        </div>
        <div>
          <dt>Storage used</dt>
          <dd>
            {bytes(holdings.urlBytes)} of {bytes(MAX_URL_BYTES)} (
            {percent < 0.1 && percent > 0 ? "< 0.1" : percent.toFixed(1)} %){" "}
            <meter id="storage" min={0} max={MAX_URL_BYTES} value={holdings.urlBytes} aria-label="Storage used" />{" "}
            <Full
              full={holdings.urlBytes >= MAX_URL_BYTES}
              what="the web addresses of your feeds and episodes fill the 8 MiB budget; unsubscribe or forget some."
            />
          </dd>
        </div>
      </dl>
    </section>
  );
};

const ConnectForm: FC<{ account: SignedInAccount; full: boolean }> = ({ account, full }) => (
  <section aria-labelledby="connect">
    <h2 id="connect">Connect an app</h2>
    <p>
      Each app signs in with a password of its own, so you can stop one without touching the others. Name the app, then
      enter what the next page shows in its sync settings.
    </p>
    {full ? (
      <p class="notice">You have {MAX_APP_PASSWORDS} app passwords, the most there may be: revoke one first.</p>
    ) : null}
    <form method="post" action="/account/app-passwords" class="inline">
      <AntiForgeryField account={account} />
      <label for="label">App name</label>
      <input
        id="label"
        name="label"
        type="text"
        required
        maxlength={MAX_LABEL_CHARACTERS}
        placeholder="gPodder on my laptop"
        autocomplete="off"
      />
      <button type="submit">Create app password</button>
    </form>
  </section>
);

const AppPasswords: FC<{ account: SignedInAccount; rows: StoredAppPassword[] }> = ({ account, rows }) => (
  <section aria-labelledby="app-passwords">
    <h2 id="app-passwords">App passwords</h2>
    {rows.length === 0 ? (
      <p>No app has been connected yet.</p>
    ) : (
      <div class="table">
        <table>
          <thead>
            <tr>
              <th scope="col">App</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <ScreenReaderOnly>Revoke</ScreenReaderOnly>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr>
                <td>
                  <ChosenName name={row.label} />
                </td>
                <td data-label="Created">{dateTime(row.createdAt)}</td>
                <td data-label="Last used">{row.lastUsedAt === null ? "never" : dateTime(row.lastUsedAt)}</td>
                <td>
                  <form method="post" action="/account/app-passwords/revoke">
                    <AntiForgeryField account={account} />
                    <input type="hidden" name="id" value={row.id} />
                    <button type="submit" class="danger">
                      Revoke
                      <ScreenReaderOnly>
                        {" "}
                        <ChosenName name={row.label} />
                      </ScreenReaderOnly>
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
);

/**
 * A device as its listener knows it: the name they gave it in the app (gPodder's caption) first, the id the app
 * syncs it under after it, smaller; a device without a caption is named by its id alone.
 */
const DeviceName: FC<{ caption: string; id: string }> = ({ caption, id }) =>
  caption.trim() === "" ? (
    <code>
      <ChosenName name={id} />
    </code>
  ) : (
    <>
      <ChosenName name={caption} />{" "}
      <span class="secondary">
        (
        <code>
          <ChosenName name={id} />
        </code>
        )
      </span>
    </>
  );

const Devices: FC<{ overview: AccountOverview }> = ({ overview }) => (
  <section aria-labelledby="devices">
    <h2 id="devices">Devices</h2>
    {overview.devices.length === 0 ? (
      <p>No app has named a device yet. (gPodder and AntennaPod name theirs when they first sync.)</p>
    ) : (
      <div class="table">
        <table>
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Type</th>
            </tr>
          </thead>
          <tbody>
            {overview.devices.map((device) => (
              <tr>
                <td>
                  <DeviceName caption={device.caption} id={device.id} />
                </td>
                <td data-label="Type">{device.type}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    )}
  </section>
);

/** `GET /account` signed in: who, what the account holds, connect an app, app passwords, devices. */
export const AccountPage: FC<{ account: SignedInAccount; overview: AccountOverview }> = ({ account, overview }) => (
  <Layout title="Your account" account={account} current="/account">
    <h1>Your account</h1>
    <p>
      Signed in as{" "}
      <strong>
        <ChosenName name={account.name} />
      </strong>
      .
    </p>
    <Holdings overview={overview} />
    <ConnectForm account={account} full={overview.appPasswords.length >= MAX_APP_PASSWORDS} />
    <AppPasswords account={account} rows={overview.appPasswords} />
    <Devices overview={overview} />
  </Layout>
);

/** A read-only field whose value is meant to be copied into an app. */
const CopyField: FC<{ id: string; label: string; value: string }> = ({ id, label, value }) => (
  <div class="field">
    <label for={id}>{label}</label>
    <input id={id} type="text" readonly value={value} autocomplete="off" spellcheck={false} />
  </div>
);

/** The answer to `Create app password`: the credentials, shown once, and the steps per app. */
export const ConnectPage: FC<{
  account: SignedInAccount;
  label: string;
  server: string;
  username: string;
  password: string;
}> = ({ account, label, server, username, password }) => (
  <Layout title={`Connect ${label}`} account={account} current="/account">
    <h1>
      Connect <ChosenName name={label} />
    </h1>
    <p class="notice" role="status">
      Enter these in the app now: the password is shown only this once (only a hash of it is kept). If you lose it,
      revoke it and create another.
    </p>
    <div class="credentials">
      <CopyField id="server" label="Server" value={server} />
      <CopyField id="username" label="Username" value={username} />
      <CopyField id="password" label="Password" value={password} />
    </div>
    <h2>gPodder (desktop)</h2>
    <ol>
      <li>
        Open <em>Preferences</em>, tab <em>gpodder.net</em>, and tick{" "}
        <em>Synchronize subscriptions and episode actions</em>.
      </li>
      <li>
        Enter the <strong>Server</strong>, <strong>Username</strong> and <strong>Password</strong> above, and a device
        name of your choice.
      </li>
      <li>Close the dialog: gPodder syncs at once and after every change.</li>
    </ol>
    <h2>AntennaPod (Android), option "gpodder.net"</h2>
    <ol>
      <li>
        <em>Settings</em> → <em>Synchronization</em> → <em>Choose a synchronization provider</em> → <em>gpodder.net</em>
        .
      </li>
      <li>
        Choose to use a custom server and enter the <strong>Server</strong> above; then the <strong>Username</strong>{" "}
        and <strong>Password</strong>.
      </li>
      <li>Create a new device (any name), then confirm. AntennaPod syncs right away.</li>
    </ol>
    <h2>AntennaPod, option "Nextcloud"</h2>
    <p class="hint">
      This option needs no password typed: granting access makes the app one of its own (the one above is then not
      needed; revoke it).
    </p>
    <ol>
      <li>
        <em>Settings</em> → <em>Synchronization</em> → <em>Choose synchronization provider</em> → the Nextcloud one (
        <em>Gpodder Sync</em>).
      </li>
      <li>
        Enter the <strong>Server</strong> above as the <em>Server address</em> and press <em>Proceed to login</em>.
      </li>
      <li>
        The browser opens this service: sign in if asked, check the app and the time the page shows, and press{" "}
        <strong>Grant access</strong>. Then return to AntennaPod: it syncs right away.
      </li>
    </ol>
    <h2>Kasts (Linux, Android)</h2>
    <ol>
      <li>
        <em>Settings</em> → <em>Synchronization</em> → <em>Login</em>, and choose the provider <em>gpodder.net</em> (or{" "}
        <em>GPodder Nextcloud</em>: it works the same).
      </li>
      <li>
        Enter the <strong>Username</strong> and <strong>Password</strong>, and the <strong>Server</strong> above (for
        gpodder.net, under <em>Use custom server</em>; for GPodder Nextcloud, as the <em>Hostname</em>). With
        gpodder.net, pick or create a device.
      </li>
    </ol>
    <p class="actions">
      <a href="/account">Back to your account</a>
    </p>
  </Layout>
);
