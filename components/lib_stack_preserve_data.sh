stack_preserve_data() {
  # What the stack file $STACK_FILE says now of blueprint:preserveData, where `pulumi config set -s
  # <stack>` writes it: true or false, or nothing when it says nothing (or no stack file is recorded).
  # Read as YAML by $CONFIG_PYTHON, the checkout's virtualenv (it has PyYAML; -I: nothing of the
  # current folder or the user's environment is imported). Fails, with why on one line, when it
  # cannot tell: a file it cannot parse may say to keep the data.
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
import sys
try:
    import yaml
    try:
        with open(sys.argv[1], encoding="utf-8") as file:
            document = yaml.safe_load(file)
    except FileNotFoundError:
        document = None
    block = (document or {}).get("config") or {}
    said = [block[key] for key in ("preserveData", "blueprint:preserveData", "blueprint:config:preserveData") if key in block]
    value = said[0] if said else ""
    value = str(value).lower() if isinstance(value, bool) else value
    if value not in ("true", "false", ""):
        raise ValueError("blueprint:preserveData is neither true nor false")
    print(value)
except Exception as error:
    sys.exit(" ".join(f"{type(error).__name__}: {error}".split())[:300])
' "$STACK_FILE" 2>&1
}
