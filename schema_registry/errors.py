"""Confluent Schema Registry's errors: an HTTP status, an ``error_code`` and a message,
answered as ``{"error_code": ..., "message": ...}`` (``io.confluent.kafka.schemaregistry
.rest.exceptions.Errors``)."""

from __future__ import annotations

MAX_VERSION = 2**31 - 1


class RegistryError(Exception):
    """A request refused with Confluent's status, code and message."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.code, "message": self.message}


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RegistryError:
    return RegistryError(404, 40403, detail)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true "
                         "to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being "
                         "permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted."
                         "Set permanent=true to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted "
                         "first before being permanently deleted")


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level "
                         "compatibility configured")


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode "
                         "configured")


def incompatible(subject: str, details: list[str]) -> RegistryError:
    return RegistryError(409, 409, "Schema being registered is incompatible with an earlier "
                         f"schema for subject \"{subject}\", details: {details}")


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema {detail}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid "
                         f"version id. Allowed values are between [1, {MAX_VERSION}] and the "
                         "string \"latest\"")


def invalid_compatibility(level: object) -> RegistryError:
    return RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, "
                         "backward, forward, full, backward_transitive, forward_transitive, "
                         f"and full_transitive (got {level!r})")


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, "
                         f"READONLY_OVERRIDE, IMPORT (got {mode!r})")


def operation_not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, 42205, detail)


def reference_exists(detail: str) -> RegistryError:
    return RegistryError(422, 42206, f"One or more references exist to the schema {detail}.")


def unprocessable(detail: str) -> RegistryError:
    """A body that is JSON but not the entity the endpoint takes."""
    return RegistryError(422, 422, detail)


def malformed_json(detail: str) -> RegistryError:
    return RegistryError(400, 400, f"Unexpected character or malformed JSON: {detail}")


def too_large(limit: int) -> RegistryError:
    return RegistryError(413, 413, f"Request body larger than {limit} bytes")


def unauthorized() -> RegistryError:
    return RegistryError(401, 401, "Unauthorized")


def not_found_endpoint() -> RegistryError:
    return RegistryError(404, 404, "HTTP 404 Not Found")


def method_not_allowed() -> RegistryError:
    return RegistryError(405, 405, "HTTP 405 Method Not Allowed")


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema: {detail}")
