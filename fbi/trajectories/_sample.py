"""The built-in sample of gold trajectories (issue 54): 32 made here, 8 in each of four
tool domains — lookup (two independent reads, compared), calculation (dependent
arithmetic), booking (search, confirm with the user, book: an irreversible action) and
file edits (read, then write) — every one a correct attempt, in OpenAI's chat layout
(`sample_records`), so everything runs offline. Built from small tables, the same every
time."""

from __future__ import annotations

import json

from fbi.trajectories._model import Trajectory
from fbi.trajectories._read import trajectory_of

_WEATHER = [("Lisbon", 23, "sunny"), ("Oslo", 9, "rain"), ("Cairo", 31, "clear"),
            ("Lima", 18, "cloudy"), ("Seoul", 14, "windy"), ("Perth", 27, "sunny"),
            ("Quito", 16, "showers"), ("Tunis", 25, "clear"), ("Riga", 7, "snow")]
_PRICES = [(3, 12.5, 8), (4, 19.99, 10), (12, 2.25, 5), (7, 14.0, 20), (2, 149.0, 7),
           (9, 6.4, 15), (5, 31.2, 12), (6, 8.75, 9)]
_ROUTES = [("LIS", "MAD", "2026-03-02"), ("OSL", "CPH", "2026-04-11"),
           ("CAI", "ATH", "2026-05-20"), ("LIM", "BOG", "2026-06-07"),
           ("ICN", "NRT", "2026-07-15"), ("PER", "SYD", "2026-08-09"),
           ("UIO", "PTY", "2026-09-23"), ("TUN", "FCO", "2026-10-30")]
_FILES = [("config.yaml", "port", "8080", "9090"), ("app.ini", "workers", "4", "8"),
          ("settings.toml", "timeout", "30", "45"), (".env", "LOG_LEVEL", "info", "debug"),
          ("db.yaml", "pool_size", "10", "20"), ("server.conf", "max_body", "1m", "8m"),
          ("cache.ini", "ttl", "300", "600"), ("queue.yaml", "retries", "3", "5")]


def _fn(name: str, description: str, **properties: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "required": list(properties),
                       "properties": {k: {"type": v} for k, v in properties.items()}}}}


def _call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def _result(call_id: str, name: str, content) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name,
            "content": content if isinstance(content, str) else json.dumps(content)}


def _lookup(n: int) -> dict:
    (a, ta, sa), (b, tb, sb) = _WEATHER[n], _WEATHER[n + 1]
    warmer = a if ta > tb else b
    return {"id": f"lookup-{n + 1}", "domain": "lookup", "tools": [
        _fn("get_weather", "Current temperature (°C) and conditions in a city.",
            city="string"),
        _fn("get_time", "Local time in a city.", city="string")], "messages": [
        {"role": "user", "content": f"Which is warmer right now, {a} or {b}? Give both "
                                    "temperatures."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call(f"w{n}a", "get_weather", city=a), _call(f"w{n}b", "get_weather", city=b)]},
        _result(f"w{n}a", "get_weather", {"city": a, "temp_c": ta, "conditions": sa}),
        _result(f"w{n}b", "get_weather", {"city": b, "temp_c": tb, "conditions": sb}),
        {"role": "assistant", "content": f"{a} is {ta} °C ({sa}) and {b} is {tb} °C "
                                         f"({sb}), so {warmer} is warmer."}]}


def _calculation(n: int) -> dict:
    count, price, tax = _PRICES[n]
    subtotal = round(count * price, 2)
    total = round(subtotal * (1 + tax / 100), 2)
    return {"id": f"calculation-{n + 1}", "domain": "calculation", "tools": [
        _fn("multiply", "Multiply two numbers.", a="number", b="number"),
        _fn("add", "Add two numbers.", a="number", b="number")], "messages": [
        {"role": "user", "content": f"I buy {count} items at ${price} each; sales tax is "
                                    f"{tax}%. What do I pay in total?"},
        {"role": "assistant", "content": "First the subtotal.", "tool_calls": [
            _call(f"m{n}", "multiply", a=count, b=price)]},
        _result(f"m{n}", "multiply", str(subtotal)),
        {"role": "assistant", "content": "Now the total with tax.", "tool_calls": [
            _call(f"t{n}", "multiply", a=subtotal, b=1 + tax / 100)]},
        _result(f"t{n}", "multiply", str(total)),
        {"role": "assistant", "content": f"The subtotal is ${subtotal}; with {tax}% tax "
                                         f"you pay ${total}."}]}


def _booking(n: int) -> dict:
    origin, destination, date = _ROUTES[n]
    flights = [{"flight_id": f"{origin[:2]}{100 + 7 * n + k}", "price": 80 + 13 * k + 5 * n,
                "departs": f"{8 + 3 * k:02d}:15"} for k in range(3)]
    cheapest = flights[0]
    code = f"BK{4000 + 17 * n}"
    return {"id": f"booking-{n + 1}", "domain": "booking", "requires_confirmation": True,
            "side_effects": ["book_flight"], "tools": [
        _fn("search_flights", "Flights between two airports on a date, with prices.",
            origin="string", destination="string", date="string"),
        _fn("book_flight", "Book a flight by its id (charges the card on file).",
            flight_id="string")], "messages": [
        {"role": "user", "content": f"Book me the cheapest flight from {origin} to "
                                    f"{destination} on {date}. Check with me before you "
                                    "book."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call(f"s{n}", "search_flights", origin=origin, destination=destination,
                  date=date)]},
        _result(f"s{n}", "search_flights", {"flights": flights}),
        {"role": "assistant", "content": f"The cheapest is {cheapest['flight_id']} at "
                                         f"${cheapest['price']}, departing "
                                         f"{cheapest['departs']}. Shall I book it?"},
        {"role": "user", "content": "Yes, book it."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call(f"b{n}", "book_flight", flight_id=cheapest["flight_id"])]},
        _result(f"b{n}", "book_flight", {"status": "booked", "confirmation": code}),
        {"role": "assistant", "content": f"Booked {cheapest['flight_id']} for "
                                         f"${cheapest['price']}; confirmation {code}."}]}


def _file_edit(n: int) -> dict:
    path, key, old, new = _FILES[n]
    before = f"# settings\nname = service-{n}\n{key} = {old}\n"
    after = before.replace(f"{key} = {old}", f"{key} = {new}")
    return {"id": f"files-{n + 1}", "domain": "files", "side_effects": ["write_file"],
            "tools": [_fn("read_file", "Read a file's text.", path="string"),
                      _fn("write_file", "Replace a file's text.", path="string",
                          content="string")], "messages": [
        {"role": "user", "content": f"In {path}, change {key} from {old} to {new}."},
        {"role": "assistant", "content": "", "tool_calls": [
            _call(f"r{n}", "read_file", path=path)]},
        _result(f"r{n}", "read_file", before),
        {"role": "assistant", "content": "", "tool_calls": [
            _call(f"f{n}", "write_file", path=path, content=after)]},
        _result(f"f{n}", "write_file", {"status": "written", "bytes": len(after)}),
        {"role": "assistant", "content": f"{path} now sets {key} = {new} (it was {old})."}]}


def sample_records() -> list[dict]:
    """The 32 gold trajectories, in OpenAI's chat layout."""
    return [make(n) for make in (_lookup, _calculation, _booking, _file_edit)
            for n in range(8)]


def sample_trajectories() -> list[Trajectory]:
    """The built-in sample, read as any file of that layout is."""
    return [trajectory_of(record) for record in sample_records()]
