"""Place names as regions are enrolled (in English), marked for translation: the pages and
benchctl show them in the reader's language from this one list (each catalogue holds the
Chinese: locale/ for the pages, workers/locale/ for benchctl)."""

from __future__ import annotations

from contract.metrics import gettext_noop

# Regions are data (an operator enrols them in English); these are the ones the service
# covers and its neighbours. A region not listed here shows as entered.
PLACES = [
    gettext_noop("Zhejiang"), gettext_noop("Hangzhou"), gettext_noop("Ningbo"),
    gettext_noop("Wenzhou"), gettext_noop("Shaoxing"), gettext_noop("Jiaxing"),
    gettext_noop("Huzhou"), gettext_noop("Jinhua"), gettext_noop("Taizhou"),
    gettext_noop("Guangdong"), gettext_noop("Shenzhen"), gettext_noop("Guangzhou"),
    gettext_noop("Dongguan"), gettext_noop("Foshan"), gettext_noop("Shanghai"),
    gettext_noop("Jiangsu"), gettext_noop("Suzhou"), gettext_noop("Nanjing"),
    gettext_noop("Beijing"), gettext_noop("Hebei"), gettext_noop("Zhangjiakou"),
    gettext_noop("Inner Mongolia"), gettext_noop("Ulanqab"), gettext_noop("Guizhou"),
    gettext_noop("Gui'an"), gettext_noop("Sichuan"), gettext_noop("Chengdu"),
]

# The province (or province-level municipality) of each city above: the administrative
# divisions of the PRC as the Ministry of Civil Affairs lists them (民政部 行政区划代码).
# Gui'an is a new area of Guizhou; Ulanqab a city of Inner Mongolia.
PROVINCE_OF = {
    **dict.fromkeys(("Hangzhou", "Ningbo", "Wenzhou", "Shaoxing", "Jiaxing", "Huzhou",
                     "Jinhua", "Taizhou"), "Zhejiang"),
    **dict.fromkeys(("Shenzhen", "Guangzhou", "Dongguan", "Foshan"), "Guangdong"),
    **dict.fromkeys(("Suzhou", "Nanjing"), "Jiangsu"),
    "Shanghai": "Shanghai", "Beijing": "Beijing", "Zhangjiakou": "Hebei",
    "Ulanqab": "Inner Mongolia", "Gui'an": "Guizhou", "Chengdu": "Sichuan",
}


def province_of(city: str) -> str:
    """The province of a city as enrolled (in English, any case); "" for one not listed."""
    return next((p for c, p in PROVINCE_OF.items() if c.lower() == city.strip().lower()), "")
