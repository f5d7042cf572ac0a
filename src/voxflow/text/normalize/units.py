"""Units of measurement after a number: "5 km" -> "five kilometers".

Decisions for ambiguous input: a unit abbreviation is singular only after exactly "1" ("1 km",
"-1 °C"), plural otherwise ("1.0 km", "0.5 km"), as US style guides have it. Abbreviations that
are also English words are not units (see ``UNITS``).
"""

from __future__ import annotations

import re

from voxflow.text.normalize.base import is_right_edge

__all__ = ["ATTACHED_UNITS", "UNITS", "is_one", "unit_after"]

# Abbreviation -> (singular, plural). Case matters ("mB" is not "MB"); ambiguous short words
# that are also English ("in", "us", "a", "s", "t") are left out on purpose.
UNITS: dict[str, tuple[str, str]] = {
    "km": ("kilometer", "kilometers"),
    "m": ("meter", "meters"),
    "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"),
    "µm": ("micrometer", "micrometers"),
    "nm": ("nanometer", "nanometers"),
    "mi": ("mile", "miles"),
    "ft": ("foot", "feet"),
    "yd": ("yard", "yards"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "oz": ("ounce", "ounces"),
    "L": ("liter", "liters"),
    "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"),
    "gal": ("gallon", "gallons"),
    "mph": ("mile per hour", "miles per hour"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "m/s": ("meter per second", "meters per second"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "sec": ("second", "seconds"),
    "ms": ("millisecond", "milliseconds"),
    "µs": ("microsecond", "microseconds"),
    "ns": ("nanosecond", "nanoseconds"),
    "yr": ("year", "years"),
    "yrs": ("year", "years"),
    "KB": ("kilobyte", "kilobytes"),
    "kB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "PB": ("petabyte", "petabytes"),
    "kbps": ("kilobit per second", "kilobits per second"),
    "Mbps": ("megabit per second", "megabits per second"),
    "Gbps": ("gigabit per second", "gigabits per second"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"),
    "W": ("watt", "watts"),
    "kW": ("kilowatt", "kilowatts"),
    "MW": ("megawatt", "megawatts"),
    "Wh": ("watt hour", "watt hours"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "V": ("volt", "volts"),
    "mA": ("milliamp", "milliamps"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "dB": ("decibel", "decibels"),
    "px": ("pixel", "pixels"),
    "cal": ("calorie", "calories"),
    "kcal": ("kilocalorie", "kilocalories"),
    "m²": ("square meter", "square meters"),
    "km²": ("square kilometer", "square kilometers"),
    "ft²": ("square foot", "square feet"),
    "sq ft": ("square foot", "square feet"),
    "m³": ("cubic meter", "cubic meters"),
    "USD": ("U S dollar", "U S dollars"),
    "EUR": ("euro", "euros"),
    "GBP": ("pound", "pounds"),
}
# Longest first, so "km/h" wins over "km" and "kWh" over "kW".
_UNIT_PATTERN = re.compile(
    r"[ \u00a0]?(" + "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)) + ")"
)
# Units written straight after a number only ("9.58s"); spaced, they would be words ("5 s").
ATTACHED_UNITS = {"s": ("second", "seconds")}


def is_one(text: str) -> bool:
    """Whether a written amount is exactly one, so its unit is singular."""
    return text.lstrip("-−+") == "1"


def unit_after(text: str, pos: int, amount: str) -> tuple[str, int] | None:
    """The unit written at ``pos`` after ``amount``, spoken, and where it ends; or ``None``."""
    found = _UNIT_PATTERN.match(text, pos)
    if found is None or not is_right_edge(text, found.end()):
        return None
    singular, plural = UNITS[found.group(1)]
    return (singular if is_one(amount) else plural), found.end()
