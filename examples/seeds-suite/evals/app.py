"""The system under test: a payments assistant that reads transfer requests in Argentine
Spanish. It has the bug the suite is there to catch: a lone thousands point ("1.500") is read
as a decimal point (1,5 pesos)."""

import json
import re

_NUMBER = re.compile(r"\d[\d.,]*")
_TRANSFER = ("mandale", "pasale", "transferile", "enviale", "depositale", "girale")
_ANSWERS = {
    "comisi": (
        "Entiendo tu consulta sobre la comisión. Te cuento con detalle cómo funciona: cada "
        "transferencia a otra entidad puede tener un cargo según tu plan, que se calcula sobre "
        "el monto y se descuenta en el momento, y además hay cargos de mantenimiento que se "
        "debitan a fin de mes según la cantidad de movimientos que hayas hecho en el período."
    ),
    "tarjeta": "Podés pedir una tarjeta nueva desde Ajustes, Tarjetas. Llega en cinco días.",
    "horario": "Las transferencias funcionan las 24 horas, todos los días.",
    "límite": "Tu límite diario se ve en Ajustes, Límites. Podés pedir que lo subamos.",
    "clave": "Nunca te vamos a pedir tu clave. Podés cambiarla desde Ajustes, Seguridad.",
}


def responder(message: str) -> str:
    """The assistant's reply: a transfer as JSON, a question when the amount is missing, or a
    short answer."""
    text = message.lower()
    if any(verb in text for verb in _TRANSFER):
        found = _NUMBER.search(text)
        if found is None:
            asked = {"accion": "pedir_aclaracion", "texto": "¿Cuánto querés transferir?"}
            return json.dumps(asked, ensure_ascii=False)
        currency = "USD" if "dólar" in text or "usd" in text else "ARS"
        reply = {"accion": "transferir", "monto_centavos": _cents(found.group()), "moneda": currency}
        return json.dumps(reply, ensure_ascii=False)
    topic = next((key for key in _ANSWERS if key in text), None)
    return _ANSWERS[topic] if topic else "Claro, te ayudo con eso. Contame un poco más."


def _cents(number: str) -> int:
    number = number.rstrip(".,")
    if "," in number:
        whole, _, decimals = number.partition(",")
        return int(whole.replace(".", "")) * 100 + int(decimals.ljust(2, "0")[:2])
    if re.fullmatch(r"\d{1,3}\.\d{3}", number):  # the bug: "1.500" read as 1.5
        return round(float(number) * 100)
    return int(number.replace(".", "")) * 100
