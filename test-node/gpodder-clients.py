"""Drives Debian's real gpodder.net clients against a locally served worker (test-node/gpodder-clients.test.ts).

Usage: python3 gpodder-clients.py mygpoclient ROOT USERNAME PASSWORD
       python3 gpodder-clients.py gpodder-sync ROOT USERNAME PASSWORD DEVICE [FEED EPISODE]
       python3 gpodder-clients.py second-device ROOT USERNAME PASSWORD DEVICE [FEED EPISODE]
   (gpodder-sync with GPODDER_HOME set to an empty directory). Prints one JSON object with what the client saw.
"""
import datetime
import json
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


def gpodder_sync(root, username, password, device, feed=None, episode=None):
    import os

    import gpodder

    gpodder.set_home(os.environ["GPODDER_HOME"])
    from gpodder import config, my

    cfg = config.Config(gpodder.config_file)
    cfg.mygpo.server = root
    cfg.mygpo.username = username
    cfg.mygpo.password = password
    cfg.mygpo.enabled = True
    cfg.mygpo.device.uid = device
    cfg.mygpo.device.caption = device
    cfg.mygpo.device.type = "desktop"
    client = my.MygPoClient(cfg)
    client.create_device()
    if feed is not None:
        client._store.save(my.SubscribeAction.add(feed))
        played = types.SimpleNamespace(url=episode, channel=types.SimpleNamespace(url=feed))
        client.on_playback_full(played, 0, 1800, 1800)
    client._worker_proc(forced=True)
    received = client.get_received_actions()
    episodes = client._store.load(my.ReceivedEpisodeAction)
    return {
        "enabled": cfg.mygpo.enabled,
        "received_subscriptions": [["add" if a.action_type == my.SubscribeAction.ADD else "remove", a.url] for a in received],
        "received_episodes": [
            {"podcast": a.podcast_url, "episode": a.episode_url, "action": a.action,
             "started": a.started, "position": a.position, "total": a.total}
            for a in episodes
        ],
        "pending_uploads": len(client._store.load(my.EpisodeAction)) + len(client._store.load(my.SubscribeAction)),
    }


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    modes = {"mygpoclient": mygpoclient_calls, "gpodder-sync": gpodder_sync, "second-device": second_device}
    print(json.dumps(modes[mode](*args)))
