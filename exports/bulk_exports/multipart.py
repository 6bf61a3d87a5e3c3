"""A write-only file object that streams into an S3 multipart upload.

pyarrow's ParquetWriter writes into it; every `part_bytes` written become one UploadPart, sent
by a background thread while the writer goes on filling the next part. One part is uploaded at a
time and the writer waits for it before handing over the next, so the stream holds at most two
parts (one uploading, one filling) whatever the file size. A full part is handed over as it is,
without a copy. Parts carry Content-MD5 (buckets with Object Lock require it). Every part but the
last has `part_bytes` >= 5 MiB, as S3 requires.

The upload is created by the caller (who records its id first, so that a worker taking over can
abort it) and is completed or aborted explicitly: closing the writer does neither.
"""

from __future__ import annotations

import base64
import hashlib
import queue
import threading

from exports.s3_clients import S3Destination

MIN_PART_BYTES = 5 * 1024 * 1024
_STOP = object()


class MultipartUploadStream:
    def __init__(self, destination: S3Destination, key: str, upload_id: str, *, part_bytes: int):
        self.destination = destination
        self.key = key
        self.upload_id = upload_id
        self.part_bytes = max(part_bytes, MIN_PART_BYTES)
        self.closed = False
        self.error: BaseException | None = None
        self._buffer = bytearray()
        self._size = 0
        self._parts: list[dict] = []
        self._next_number = 1
        # Taken by the writer for each part it hands over, given back once that part is uploaded.
        self._upload_slot = threading.Semaphore(1)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._upload_loop, name=f"upload-{key[-40:]}", daemon=True)
        self._thread.start()

    # --- the file interface pyarrow uses ---

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._raise_error()
        view = memoryview(data).cast("B")
        while view:
            take = min(len(view), self.part_bytes - len(self._buffer))
            self._buffer += view[:take]
            view = view[take:]
            if len(self._buffer) == self.part_bytes:
                self._submit(self._buffer)
                self._buffer = bytearray()
        self._size += len(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        self._raise_error()

    def close(self) -> None:
        self.closed = True

    # --- completing or aborting the upload ---

    def complete(self) -> dict:
        """Send what is left as the last part, wait for every part, and complete the upload."""
        if self._buffer or not self._parts and self._next_number == 1:
            self._submit(self._buffer)
            self._buffer = bytearray()
        self._finish_thread()
        self._raise_error()
        parts = sorted(self._parts, key=lambda p: p["PartNumber"])
        return self.destination.client.complete_multipart_upload(
            Bucket=self.destination.bucket, Key=self.key, UploadId=self.upload_id,
            MultipartUpload={"Parts": parts})

    def stop(self) -> None:
        """Stop the background thread without completing (the caller aborts the upload)."""
        self._buffer = bytearray()
        self._finish_thread()

    @property
    def size(self) -> int:
        return self._size

    # --- internals ---

    def _submit(self, part: bytearray) -> None:
        number = self._next_number
        self._next_number += 1
        while not self._upload_slot.acquire(timeout=0.5):
            self._raise_error()
        self._raise_error()
        self._queue.put((number, part))

    def _finish_thread(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def _upload_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            self._send(*item)
            item = None  # the part must not stay alive while the writer fills the next one

    def _send(self, number: int, part: bytearray) -> None:
        try:
            if self.error is None:  # after an error, parts are dropped: the writer sees it on its next call
                md5 = base64.b64encode(hashlib.md5(part).digest()).decode()
                response = self.destination.client.upload_part(
                    Bucket=self.destination.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=number,
                    Body=part, ContentMD5=md5)
                self._parts.append({"PartNumber": number, "ETag": response["ETag"]})
        except BaseException as exc:  # noqa: BLE001 - handed to the writer's thread
            self.error = exc
        finally:
            self._upload_slot.release()
