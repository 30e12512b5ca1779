stack_preserve_data() {
  # What the stack file $STACK_FILE says now of blueprint:preserveData, where `pulumi config set -s
  # <stack>` writes it: true or false, or nothing when it says nothing (or no stack file is recorded).
  # Read by $CONFIG_PYTHON, the checkout's virtualenv, with the checkout's yaml_files (found through
  # the virtualenv's own path file, which `uv sync` writes; -I: nothing of the current folder or the
  # user's environment is imported): by the rules the program reads it with, so `no` is no false.
  # Fails, with why on one line, when it cannot tell: a file it cannot parse may say to keep the data,
  # and so may one that spells the key twice (Pulumi keeps either, by Go's random map order).
  [ -n "$STACK_FILE" ] || return 0
  # None there (the nearest folder on its path that is there can be searched, so none is hidden): it
  # says nothing, and needs no reader. So too when its folder is gone, with a moved checkout.
  there=$STACK_FILE
  while [ ! -e "$there" ] && [ ! -L "$there" ] && [ "$there" != / ]; do there=$(dirname -- "$there"); done
  if [ "$there" != "$STACK_FILE" ] && [ -x "$there" ]; then return 0; fi
  if [ ! -x "$CONFIG_PYTHON" ]; then
    echo "no Python at $CONFIG_PYTHON reads it (run 'uv sync' in the checkout)"
    return 1
  fi
  "$CONFIG_PYTHON" -I -c '
import os, stat, sys
try:
    from yaml_files import MAX_BYTES, load_text
    try:
        # Without blocking, and a regular file alone: a FIFO there would hang the delete.
        fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if os.path.islink(sys.argv[1]):
            raise ValueError(f"it is a link to {os.readlink(sys.argv[1])}, which does not exist") from None
        document = None
    else:
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError("it is not a regular file")
            data = file.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ValueError(f"it holds more than {MAX_BYTES:,} bytes")
        document = load_text(data.decode("utf-8"), "it")
    block = (document or {}).get("config") or {}
    spellings = [key for key in ("preserveData", "blueprint:preserveData", "blueprint:config:preserveData") if key in block]
    if len(spellings) > 1:
        spelt = " and ".join(spellings)
        raise ValueError(f"it gives preserveData {len(spellings)} times, as {spelt}: keep one")
    said = [block[key] for key in spellings]
    value = said[0] if said else ""
    value = str(value).lower() if isinstance(value, bool) else value
    if value not in ("true", "false", ""):
        raise ValueError("blueprint:preserveData is neither true nor false")
    print(value)
except Exception as error:
    sys.exit(" ".join(f"{type(error).__name__}: {error}".split())[:300])
' "$STACK_FILE" 2>&1
}
