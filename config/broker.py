"""The embedded broker: kombu's filesystem transport without its empty-file race.

kombu's writer creates the message file, then locks it, then writes; its reader lists the
folder and moves any `.msg` file it sees without taking the lock. A reader that lands between
the create and the write moves an empty file: `json.loads("")` raises in the consumer loop
(the worker dies) and the writer's bytes go into the moved inode, so the message is lost too.

Here a message is written whole under a staging folder and renamed into the queue folder:
rename(2) within one file system is atomic, so a reader sees a complete file or none. The
reader claims a file by renaming it into a claim folder next to the queue (kombu moves it to
the system temp folder, which is a copy when that is another file system), and a file another
reader claimed first is skipped. Selected in config/settings.py through `broker_transport`.
"""

import os
import uuid
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

STAGING = "staging"  # messages being written; never listed as a queue's message
CLAIMED = "claimed"  # messages a reader took, read and removed at once


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Write the message under the staging folder, then rename it into the queue folder."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        staged = os.path.join(self.data_folder_out, STAGING, name)
        try:
            with open(staged, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.rename(staged, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _get(self, queue):
        """Claim the oldest message of `queue` by renaming it; skip any another reader took."""
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.data_folder_in, CLAIMED, name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue  # another reader claimed it first
            try:
                with open(claimed, "rb") as file:
                    payload = file.read()
                os.remove(claimed)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel


def folders(options: dict) -> list[str]:
    """Every folder the transport needs, from its transport options."""
    queue_folders = {
        options[key] for key in ("data_folder_in", "data_folder_out") if key in options
    }
    subfolders = [
        os.path.join(folder, sub) for folder in queue_folders for sub in (STAGING, CLAIMED)
    ]
    control = [options["control_folder"]] if "control_folder" in options else []
    return sorted(queue_folders) + subfolders + control
