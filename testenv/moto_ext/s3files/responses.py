"""S3 Files responses: each operation reads its input where the model puts it, checks it, and
answers what `models.S3FilesBackend` returns, serialised by moto from the model's output shape."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from botocore import xform_name
from moto.core.responses import ActionResult, BaseResponse

from .models import MODEL, S3FilesBackend, parse_request, s3files_backends


class S3FilesResponse(BaseResponse):
    def __init__(self) -> None:
        super().__init__(service_name="s3files")

    @property
    def backend(self) -> S3FilesBackend:
        return s3files_backends[self.current_account][self.region]

    def _serve(self, operation: str) -> ActionResult:
        try:
            body = json.loads(self.body) if self.body else {}
        except ValueError:
            body = None
        query = parse_qs(self.parsed_url.query, keep_blank_values=True)
        params = parse_request(operation, self.uri_match, query, body)
        answer = getattr(self.backend, xform_name(operation))(**params)
        return ActionResult(answer or {})


def _method(operation: str) -> Any:
    def method(self: S3FilesResponse) -> ActionResult:
        return self._serve(operation)

    method.__name__ = xform_name(operation)
    return method


for _operation in MODEL.operation_names:
    setattr(S3FilesResponse, xform_name(_operation), _method(_operation))
