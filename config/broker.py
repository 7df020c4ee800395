"""The embedded broker: kombu's filesystem transport without its empty-file race.

kombu's writer creates the message file, then locks it, then writes; its reader lists the
folder and moves any `.msg` file it sees without taking the lock. A reader that lands between
the create and the write moves an empty file: `json.loads("")` raises in the consumer loop
(the worker dies) and the writer's bytes go into the moved inode, so the message is lost too.

Here a message is written whole under a staging folder and renamed into the queue folder:
rename(2) within one file system is atomic, so a reader sees a complete file or none. The
reader claims a file by renaming it into a claim folder next to the queue (kombu moves it to
the system temp folder, which is a copy when that is another file system), and a file another
reader claimed first is skipped.

An exchange's binding table has the same race: kombu creates it with open("wb") (empty until
written) and rewrites it in place, so a process reading or binding at that moment reads "" and
dies on JSONDecodeError, or two processes starting together lose a binding. Here table changes
are serialised by a lock file in the control folder and each new table is renamed into place.

Registered as the `embedded://` transport; config/settings/broker.py names it in the broker URL.
"""

import os
import uuid
from contextlib import contextmanager
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

STAGING = "staging"  # messages being written; never listed as a queue's message
CLAIMED = "claimed"  # messages a reader took, read and removed at once
TABLES_LOCK = ".tables.lock"  # held while an exchange's binding table is changed


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

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._tables_locked():
            table = self.get_table(exchange)
            if binding not in table:
                self._replace_table(exchange, [binding, *table])

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        virtual.Channel._delete(self, queue)  # purge; kombu's own table edit is replaced here
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._tables_locked():
            table = self.get_table(exchange)
            if binding in table:
                self._replace_table(exchange, [entry for entry in table if entry != binding])

    @contextmanager
    def _tables_locked(self):
        with open(self.control_folder / TABLES_LOCK, "a") as lock_file:
            filesystem.lock(lock_file, filesystem.LOCK_EX)
            try:
                yield
            finally:
                filesystem.unlock(lock_file)

    def _replace_table(self, exchange, table: list) -> None:
        """Write the whole table beside the old one, then rename it over (readers see one or
        the other, never a torn or empty file)."""
        file = self._exchange_file(exchange)
        staged = file.with_name(file.name + ".staged")  # one writer at a time: the lock
        staged.write_bytes(str_to_bytes(dumps(table)))
        os.replace(staged, file)


class Transport(filesystem.Transport):
    Channel = Channel


TRANSPORT_ALIASES["embedded"] = "config.broker:Transport"


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
