"""Google's error shape for rejected requests."""

STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    412: "FAILED_PRECONDITION",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
}

REASON = {
    400: "invalid",
    404: "notFound",
    409: "alreadyExists",
    412: "conditionNotMet",
    501: "notImplemented",
}


class ApiError(Exception):
    def __init__(self, code, message, reason=None, status=None, field=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASON.get(code, "backendError")
        self.status = status or STATUS.get(code, "UNKNOWN")
        self.field = field

    def body(self):
        error = {
            "code": self.code,
            "message": self.message,
            "errors": [{"message": self.message, "domain": "global", "reason": self.reason}],
            "status": self.status,
        }
        if self.code == 400 and self.field:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": self.field, "description": self.message}],
                }
            ]
        return {"error": error}


def invalid(message, field=None, reason="invalid"):
    return ApiError(400, message, reason=reason, field=field)


def not_found(message):
    return ApiError(404, message)


def already_exists(message):
    return ApiError(409, message)


def precondition(message):
    return ApiError(412, message)


def unimplemented(message):
    return ApiError(501, message)
