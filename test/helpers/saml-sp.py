#!/usr/bin/python3
"""A SAML service provider written by others (pysaml2, Debian's python3-pysaml2 with xmlsec1),
run by the tests as a process: it makes the requests Gatehouse must answer and judges the answers
as any service provider would (signature, audience, recipient, destination, times, InResponseTo).

One JSON command per line on stdin, one JSON answer per line on stdout (the process stays up,
so that the library is loaded once):
  {"op": "metadata", "sp": {...}}                      -> {"xml": ...}
  {"op": "request", "sp": {...}, "binding": "redirect"|"post", "force": bool, "passive": bool, "nameid_format": str|null, "relay_state": str}
                                                        -> {"id": ..., "url": ...} | {"id": ..., "action": ..., "fields": {...}}
  {"op": "response", "sp": {...}, "saml_response": b64, "outstanding": [ids]}
                                                        -> {"ok": true, "name_id": ..., "name_id_format": ..., "attributes": {...}, "session_index": ..., "issuer": ...} | {"ok": false, "error": ...}
  {"op": "logout", "sp": {...}, "name_id": ..., "name_id_format": ..., "session_index": ..., "sign": bool} -> {"id": ..., "url": ...}
  {"op": "logout_response", "sp": {...}, "query": raw query string}  -> {"ok": bool, "status": ..., "error": ...}

`sp`: {"entity_id", "acs", "slo", "key_file", "cert_file", "idp_metadata", "sign_requests": bool}
"""
import json
import sys
import traceback
from urllib.parse import parse_qs, urlparse

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.saml import NameID
from saml2.xmldsig import SIG_RSA_SHA256, DIGEST_SHA256


def client(sp):
    conf = SPConfig()
    conf.load({
        "entityid": sp["entity_id"],
        "service": {"sp": {
            "endpoints": {
                "assertion_consumer_service": [(sp["acs"], BINDING_HTTP_POST)],
                "single_logout_service": [(sp["slo"], BINDING_HTTP_REDIRECT)],
            },
            "authn_requests_signed": sp.get("sign_requests", False),
            "logout_requests_signed": True,
            "want_assertions_signed": True,
            "want_response_signed": True,
            "allow_unsolicited": sp.get("allow_unsolicited", False),
            "name_id_format": sp.get("name_id_formats", []),
        }},
        "key_file": sp["key_file"],
        "cert_file": sp["cert_file"],
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "metadata": {"inline": [sp["idp_metadata"]]} if sp.get("idp_metadata") else {},
        "accepted_time_diff": 5,
        "allow_unknown_attributes": True,
        "signing_algorithm": SIG_RSA_SHA256,
        "digest_algorithm": DIGEST_SHA256,
    })
    return Saml2Client(conf)


def main(cmd):
    op, sp = cmd["op"], cmd["sp"]
    if op == "metadata":
        from saml2.metadata import create_metadata_string
        conf = client(sp).config
        xml = create_metadata_string(None, conf, 4, None, None, None, None, None).decode()
        return {"xml": xml}
    c = client(sp)
    idp = c.metadata.identity_providers()[0] if sp.get("idp_metadata") else None
    if op == "request":
        binding = BINDING_HTTP_POST if cmd.get("binding") == "post" else BINDING_HTTP_REDIRECT
        kwargs = {}
        if cmd.get("force"):
            kwargs["force_authn"] = "true"
        if cmd.get("passive"):
            kwargs["is_passive"] = "true"
        reqid, info = c.prepare_for_authenticate(
            entityid=idp, relay_state=cmd.get("relay_state", ""), binding=binding,
            nameid_format=cmd.get("nameid_format"), sign=sp.get("sign_requests", False),
            sigalg=SIG_RSA_SHA256, digest_alg=DIGEST_SHA256, **kwargs)
        if binding == BINDING_HTTP_REDIRECT:
            return {"id": reqid, "url": dict(info["headers"])["Location"]}
        # the auto-posting page pysaml2 made: its form's action and fields
        import html as htmlmod, re
        page = info["data"]
        action = htmlmod.unescape(re.search(r'<form[^>]*action="([^"]*)"', page).group(1))
        fields = {m.group(1): htmlmod.unescape(m.group(2)) for m in re.finditer(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page)}
        return {"id": reqid, "action": action, "fields": fields}
    if op == "response":
        outstanding = {i: "/" for i in cmd.get("outstanding", [])}
        try:
            resp = c.parse_authn_request_response(cmd["saml_response"], BINDING_HTTP_POST, outstanding=outstanding)
        except Exception as e:  # the answer a service provider gives: refused, and why
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}
        if resp is None:
            return {"ok": False, "error": "no response"}
        assertion = resp.assertion
        name_id = assertion.subject.name_id
        statement = assertion.authn_statement[0]
        return {
            "ok": True, "name_id": name_id.text, "name_id_format": name_id.format,
            "attributes": {k: v for k, v in resp.ava.items()}, "session_index": statement.session_index,
            "issuer": resp.issuer(), "in_response_to": resp.in_response_to,
            "authn_context": statement.authn_context.authn_context_class_ref.text,
            "audience": [a.text for r in assertion.conditions.audience_restriction for a in r.audience],
        }
    if op == "logout":
        name_id = NameID(text=cmd["name_id"], format=cmd["name_id_format"])
        dest = c.metadata.single_logout_service(idp, BINDING_HTTP_REDIRECT, "idpsso")[0]["location"]
        reqid, req = c.create_logout_request(dest, idp, name_id=name_id, session_indexes=[cmd["session_index"]] if cmd.get("session_index") else None,
                                             sign=False)
        info = c.apply_binding(BINDING_HTTP_REDIRECT, str(req), dest, cmd.get("relay_state", ""), sign=cmd.get("sign", True), sigalg=SIG_RSA_SHA256)
        return {"id": reqid, "url": dict(info["headers"])["Location"]}
    if op == "logout_response":
        from saml2.sigver import verify_redirect_signature
        args = _split(cmd["query"])
        try:
            resp = c.parse_logout_request_response(args["SAMLResponse"], BINDING_HTTP_REDIRECT)
            # the Redirect binding's signature over the query, with the IdP's signing certificates only
            certs = c.metadata.certs(idp, "idpsso", "signing")
            import textwrap
            signed = any(verify_redirect_signature(args, c.sec.sec_backend, cert="\n".join(textwrap.wrap("".join(cert.split()), 64))) for cert in certs)
        except Exception as e:  # refused, and why
            return {"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        return {"ok": signed, "status": resp.response.status.status_code.value, "in_response_to": resp.response.in_response_to}
    raise SystemExit(f"unknown op {op}")


def _split(query):
    out = {}
    for part in query.split("&"):
        k, _, v = part.partition("=")
        from urllib.parse import unquote_plus
        out[unquote_plus(k)] = unquote_plus(v)
    return out


if __name__ == "__main__":
    from saml_peer import serve
    serve(main)
