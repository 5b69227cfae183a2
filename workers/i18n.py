"""benchctl's language: Simplified Chinese when the person's locale asks for it, else English.

The messages are gettext's, in a catalogue of benchctl's own (the web's Django catalogue is the
platform's, and a host has no Django): workers/locale/zh_Hans/LC_MESSAGES/benchctl.po,
compiled to benchctl.mo beside it. The .mo is kept in the repository so that an installed
benchctl needs no msgfmt. After changing a marked message:

    cd workers && xgettext -L Python -k_ -kgettext_noop --from-code=UTF-8 --add-location=file \
        -o /tmp/benchctl.pot cli.py buyer/*.py ../contract/metrics.py ../contract/areas.py
    cd locale/zh_Hans/LC_MESSAGES && msgmerge -U --backup=none benchctl.po /tmp/benchctl.pot
    msgfmt -c -o benchctl.mo benchctl.po

Messages with values take named fields (``_("job {id}").format(id=...)``): a translation may
put them in another order.
"""

from __future__ import annotations

import gettext
import os
import re
import sys
from collections.abc import Mapping

DOMAIN = "benchctl"
LOCALE_DIR = os.path.join(os.path.dirname(__file__), "locale")
ENGLISH, CHINESE = "en", "zh_Hans"
# The order Python's gettext reads them in: the first one set wins, and LANGUAGE may list
# several preferences ("fr:zh_CN:en").
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
# zh_CN, zh_SG, zh_Hans, zh.UTF-8, zh-Hans... The only Chinese catalogue is Simplified, which a
# zh_TW reader also reads more easily than English.
_CHINESE = re.compile(r"^zh([_.@-]|$)", re.IGNORECASE)


def language(environ: Mapping[str, str] | None = None) -> str:
    """CHINESE or ENGLISH, from the locale variables as gettext reads them."""
    env = os.environ if environ is None else environ
    chosen = next((env[name] for name in LOCALE_VARIABLES if env.get(name)), "")
    for preference in chosen.split(":"):
        if _CHINESE.match(preference):
            return CHINESE
        if preference.split(".")[0] in ("C", "POSIX") or preference.lower().startswith("en"):
            return ENGLISH  # the messages' own language: no catalogue to look further for
    return ENGLISH


def _can_show_chinese() -> bool:
    """An ASCII-only terminal gets English rather than a UnicodeEncodeError."""
    try:
        "节点".encode(getattr(sys.stdout, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def translations(lang: str) -> gettext.NullTranslations:
    if lang == CHINESE:
        return gettext.translation(DOMAIN, LOCALE_DIR, languages=[CHINESE], fallback=True)
    return gettext.NullTranslations()


_active = translations(language() if _can_show_chinese() else ENGLISH)


def activate(lang: str) -> None:
    """Switch language (tests; the command line reads the environment once, at import)."""
    global _active
    _active = translations(lang)


def _(message: str) -> str:
    # gettext("") is the catalogue's header, never an empty message.
    return _active.gettext(message) if message else message


def gettext_noop(message: str) -> str:
    """Marks a message shown translated elsewhere (xgettext -kgettext_noop finds it)."""
    return message
