"""The exceptions fleetplan raises: one per exit code of the `fleetplan` command.

Each carries `message` (exactly the text the CLI prints on stderr, located and with the
source line and caret where known) and `code` (the CLI's exit code). str(error) is the
message.
"""


class Error(Exception):
    """Base of fleetplan's errors."""

    code = 70

    def __init__(self, message, code=None, file=None, line=None, column=None, field=None, detail=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        # Where a located error points; None where unknown (see InputError).
        self.file = file or None
        self.line = line or None
        self.column = column or None
        self.field = field or None
        self.detail = detail or None

    def __str__(self):
        return self.message


class InputError(Error, ValueError):
    """Invalid input (exit code 3), located like every input error of the CLI:

    file    the file as named (a path, "<built-in atlas>", "<dict>", "<string>", or
            "NAME (edited)" for an edited Scenario); None for an argument
    line, column
            1-based, in that file; for a dict or an edited Scenario, in the YAML that
            Scenario.yaml shows (each value on its own line)
    field   the dotted field path ("engine.scheduler.policy") or the argument ("seed",
            "--tp" for fit and layout, which take the verb's flags)
    detail  the message alone, without location, field or snippet
    """

    code = 3


class CheckFailed(Error):
    """A requested check failed (exit code 1), e.g. a pool whose layout leaves no memory."""

    code = 1


class UsageError(Error, TypeError):
    """A call the verb cannot parse (exit code 2)."""

    code = 2


class FolderBusy(Error):
    """The output folder is held by another run (exit code 75): retry once it ends, or
    write elsewhere."""

    code = 75


class InternalError(Error):
    """A bug in fleetplan (exit code 70)."""

    code = 70
