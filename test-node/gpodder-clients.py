"""Drives Debian's real gpodder.net clients against a locally served worker (test-node/gpodder-clients.test.ts).

Usage: python3 gpodder-clients.py mygpoclient ROOT USERNAME PASSWORD
       python3 gpodder-clients.py gpodder-sync ROOT USERNAME PASSWORD DEVICE [FEED EPISODE]
       python3 gpodder-clients.py second-device ROOT USERNAME PASSWORD DEVICE [FEED EPISODE]
       python3 gpodder-clients.py gpodder-device ROOT USERNAME PASSWORD DEVICE STEP...
       python3 gpodder-clients.py pull ROOT USERNAME PASSWORD DEVICE SINCE
   (gpodder-sync with GPODDER_HOME set to an empty directory, gpodder-device with the same GPODDER_HOME for each
   run of one device). Prints one JSON object with what the client saw.
"""
import atexit
import datetime
import json
import os
import sys
import types


def mygpoclient_calls(root, username, password):
    from mygpoclient import api

    # One client object: it answers only three 401 challenges, so the calls after the third prove the cookie.
    client = api.MygPodderClient(username, password, root)
    feed = "https://mygpoclient.example.com/feed.xml"
    episode = "https://mygpoclient.example.com/1.mp3"
    out = {}
    out["device_updated"] = client.update_device_settings("ci-device", caption="CI", type="desktop")
    out["devices"] = [[d.device_id, d.caption, d.type, d.subscriptions] for d in client.get_devices()]
    result = client.update_subscriptions("ci-device", [feed, " https://mygpoclient.example.com/padded.xml "], [])
    out["update_urls"] = result.update_urls
    changes = client.pull_subscriptions("ci-device", since=0)
    out["pulled"] = {"add": changes.add, "remove": changes.remove, "since": changes.since}
    action = api.EpisodeAction(feed, episode, "play", device="ci-device", timestamp="2026-01-02T03:04:05",
                               started=0, position=42, total=100)
    out["uploaded_since"] = client.upload_episode_actions([action])
    downloaded = client.download_episode_actions(since=0)
    out["downloaded"] = [a.to_dictionary() for a in downloaded.actions]
    client.put_subscriptions("ci-device", [feed])
    out["subscriptions"] = client.get_subscriptions("ci-device")
    out["devices_after"] = [d.device_id for d in client.get_devices()]
    return out


def second_device(root, username, password, device, feed=None, episode=None):
    """Another device of the same user (test-node/antennapod-nextcloud.browser.test.ts): everything from the start,
    then, given FEED and EPISODE, a new subscription and a play at 1234 s of 3600 s stamped with the current time."""
    from mygpoclient import api

    client = api.MygPodderClient(username, password, root)
    changes = client.pull_subscriptions(device, since=0)
    out = {"subscriptions": changes.add, "removed": changes.remove}
    out["actions"] = [a.to_dictionary() for a in client.download_episode_actions(since=0).actions]
    if feed is not None:
        out["update_urls"] = client.update_subscriptions(device, [feed], []).update_urls
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        action = api.EpisodeAction(feed, episode, "play", device=device, timestamp=now,
                                   started=0, position=1234, total=3600)
        out["uploaded_since"] = client.upload_episode_actions([action])
    return out


def sync_engine(cfg, root, username, password, device):
    """gPodder's sync engine (my.MygPoClient) on config `cfg`, set as its gpodder.net preferences would be."""
    from gpodder import my

    cfg.mygpo.server = root
    cfg.mygpo.username = username
    cfg.mygpo.password = password
    cfg.mygpo.enabled = True
    cfg.mygpo.device.uid = device
    cfg.mygpo.device.caption = device
    cfg.mygpo.device.type = "desktop"
    return my.MygPoClient(cfg)


def gpodder_sync(root, username, password, device, feed=None, episode=None):
    import os

    import gpodder

    gpodder.set_home(os.environ["GPODDER_HOME"])
    from gpodder import config, my

    client = sync_engine(config.Config(gpodder.config_file), root, username, password, device)
    client.create_device()
    if feed is not None:
        client._store.save(my.SubscribeAction.add(feed))
        played = types.SimpleNamespace(url=episode, channel=types.SimpleNamespace(url=feed))
        client.on_playback_full(played, 0, 1800, 1800)
    client._worker_proc(forced=True)
    received = client.get_received_actions()
    episodes = client._store.load(my.ReceivedEpisodeAction)
    return {
        "enabled": client._config.mygpo.enabled,
        "received_subscriptions": [["add" if a.action_type == my.SubscribeAction.ADD else "remove", a.url] for a in received],
        "received_episodes": [
            {"podcast": a.podcast_url, "episode": a.episode_url, "action": a.action,
             "started": a.started, "position": a.position, "total": a.total}
            for a in episodes
        ],
        "pending_uploads": len(client._store.load(my.EpisodeAction)) + len(client._store.load(my.SubscribeAction)),
    }


def pull(root, username, password, device, since):
    """mygpoclient's subscription and episode reads from SINCE (0: a new device)."""
    from mygpoclient import api

    client = api.MygPodderClient(username, password, root)
    changes = client.pull_subscriptions(device, since=int(since))
    actions = client.download_episode_actions(since=int(since)).actions
    return {"add": changes.add, "remove": changes.remove, "since": changes.since,
            "actions": [{"podcast": a.podcast, "episode": a.episode, "action": a.action, "position": a.position}
                        for a in actions]}


def gpodder_ui(**attributes):
    """The methods of gPodder's UI (gtkui/main.py, class gPodder) that a step needs, on an object holding
    `attributes` in place of the window's: the package's code, not a copy. gtkui cannot be imported without a
    display (GTK aborts), so each method's source is read out of the installed file and compiled alone."""
    import ast
    import logging
    import time

    import gpodder.gtkui

    path = os.path.join(os.path.dirname(gpodder.gtkui.__file__), "main.py")
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    ui = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "gPodder")
    methods = [n for n in ui.body if isinstance(n, ast.FunctionDef) and n.name in ("find_episode", "on_played")]
    scope = {"time": time, "logger": logging.getLogger("gpodder.gtkui.main")}
    exec(compile(ast.Module(body=methods, type_ignores=[]), path, "exec"), scope)
    window = types.SimpleNamespace(**attributes)
    for method in methods:
        setattr(window, method.name, types.MethodType(scope[method.name], window))
    return window


def gpodder_device(root, username, password, device, *steps):
    """One run of a gPodder device (its GPODDER_HOME kept between runs) through the package's own Core, Model and
    sync engine, doing STEPs in order, as its UI would:
      subscribe:URL  Model.load_podcast (fetches the feed) and MygPoClient.on_subscribe, as the subscribe dialog
      accept         the received subscription changes (what the pulls since the last accept brought) as the UI's
                     on_add_remove_podcasts_mygpo takes them at a manual update: an `add` of a URL it holds and a
                     `remove` of one it does not are confirmed silently; the rest, which it asks about, are
                     reported as `offered` and carried out as if every box were ticked (loaded and subscribed;
                     deleted and unsubscribed)
      update         PodcastChannel.update of every podcast: gPodder's feed update (a 301/308 rewrites its URL)
      play:URL       the episode of that media URL played to its end (0 to 1800 of 1800) as the UI's on_played
                     takes a player's report: the episode marked and the action queued
      sync           the sync engine's run (MygPoClient._worker_proc: subscriptions pulled and pushed, episode
                     actions downloaded and uploaded)
      apply          the received episode actions applied as the UI does after a feed update
                     (process_episode_actions with its find_episode: exact podcast URL, exact episode URL)
    """
    import gpodder

    gpodder.set_home(os.environ["GPODDER_HOME"])
    gpodder.prefix = "/usr"  # as Debian's /usr/bin/gpo sets it before its Core (the extensions are found there)
    from gpodder import core, my

    app = core.Core()
    client = sync_engine(app.config, root, username, password, device)
    # Its quit-time sync (atexit) would pull after this run has reported: the runs sync only where a step says.
    atexit.unregister(client._at_exit)
    client.create_device()
    out = {"received_subscriptions": [], "offered": [], "received_episodes": [], "pulls": []}
    # What each of the engine's subscription pulls brought, watched on its mygpoclient object (nothing changed).
    pull_subscriptions = client._client.pull_subscriptions

    def watched_pull(device_id, since=None):
        changes = pull_subscriptions(device_id, since)
        out["pulls"].append({"since": since, "add": changes.add, "remove": changes.remove})
        return changes

    client._client.pull_subscriptions = watched_pull
    for step in steps:
        name, _, argument = step.partition(":")
        if name == "subscribe":
            app.model.load_podcast(argument)
            client.on_subscribe([argument])
        elif name == "accept":
            received = client.get_received_actions()
            named = lambda a: ["add" if a.is_add else "remove", a.url]  # noqa: E731
            out["received_subscriptions"] += [named(a) for a in received]
            held = {podcast.url: podcast for podcast in app.model.get_podcasts()}
            out["offered"] += [
                named(a) for a in received if (a.url in held) != a.is_add]
            for action in received:
                if action.is_add and action.url not in held:
                    try:
                        app.model.load_podcast(action.url)
                        client.on_subscribe([action.url])
                    except Exception as error:  # as add_podcast_list: the attempt is dropped, the error shown
                        out["failed"] = out.get("failed", []) + [str(error)]
                elif action.is_remove and action.url in held:
                    held[action.url].delete()
                    client.on_unsubscribe([action.url])
            client.confirm_received_actions(received)
        elif name == "update":
            for podcast in app.model.get_podcasts():
                podcast.update()
        elif name == "play":
            played = next(e for p in app.model.get_podcasts() for e in p.get_all_episodes() if e.url == argument)
            window = gpodder_ui(episode_object_by_uri=lambda uri: played, mygpo_client=client,
                                episode_list_status_changed=lambda episodes: None)
            window.on_played(0, 1800, 1800, "file:///played.mp3")
        elif name == "sync":
            client._worker_proc(forced=True)
        elif name == "apply":
            received = client._store.load(my.ReceivedEpisodeAction)
            out["received_episodes"] += [{"podcast": a.podcast_url, "episode": a.episode_url, "action": a.action,
                                          "position": a.position} for a in received]
            window = gpodder_ui(channels=app.model.get_podcasts())
            client.process_episode_actions(window.find_episode)
        else:
            raise ValueError(f"unknown step {step}")
    app.db.commit()
    client._store.commit()
    out["podcasts"] = [
        {"url": podcast.url, "episodes": [
            {"url": e.url, "played": not e.is_new, "position": e.current_position, "total": e.total_time}
            for e in podcast.get_all_episodes()]}
        for podcast in app.model.get_podcasts()
    ]
    out["pending_uploads"] = len(client._store.load(my.EpisodeAction)) + len(client._store.load(my.SubscribeAction))
    return out


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    modes = {"mygpoclient": mygpoclient_calls, "gpodder-sync": gpodder_sync, "second-device": second_device,
             "gpodder-device": gpodder_device, "pull": pull}
    print(json.dumps(modes[mode](*args)))
