"""The launcher's messages (see lvegit.checkers.launcher): one JSON object per SOCK_SEQPACKET message,
with descriptors passed along (SCM_RIGHTS). A module of its own, so that the launcher process, which
imports it, loads nothing of lvegit's side (subprocess, threads, temporary files)."""

from __future__ import annotations

import array
import json
import socket
from typing import Any

MAX_MESSAGE_BYTES = 65536


def send(channel: socket.socket, message: dict[str, Any], descriptors: tuple[int, ...] = ()) -> None:
    """One message, with descriptors passed along where given."""
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", descriptors))] if descriptors else []
    channel.sendmsg([json.dumps(message).encode()], ancillary)


def receive(channel: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and the descriptors that came with it; (None, []) when the other side has gone."""
    size = socket.CMSG_SPACE(3 * array.array("i").itemsize)
    data, ancillary, _flags, _address = channel.recvmsg(MAX_MESSAGE_BYTES, size)
    descriptors = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            descriptors.frombytes(payload[: len(payload) - len(payload) % descriptors.itemsize])
    if not data:
        return None, list(descriptors)
    return json.loads(data), list(descriptors)
