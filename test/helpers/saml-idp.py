#!/usr/bin/python3
"""A SAML identity provider written by others (pysaml2, Debian's python3-pysaml2 with xmlsec1), run
by the tests as a process: it reads Gatehouse's AuthnRequests as any identity provider would and
answers with the responses an organization's Okta or ADFS would send.

One JSON command per line on stdin, one JSON answer per line on stdout:
  {"op": "metadata", "idp": {...}}                                  -> {"xml": ...}
  {"op": "respond", "idp": {...}, "query": raw query of the request, "identity": {...}, "name_id": {"format", "text"},
   "sign_assertion": bool, "sign_response": bool}                   -> {"acs", "saml_response", "relay_state", "request_id", "xml"}
  {"op": "unsolicited", "idp": {...}, "sp_entity_id", "acs", "identity", "name_id"} -> {"acs", "saml_response", "xml"}

`idp`: {"entity_id", "sso", "key_file", "cert_file", "sp_metadata"}
"""
import base64
import json
import sys
import traceback
from urllib.parse import parse_qs

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.saml import NameID, NAME_FORMAT_BASIC
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_PERSISTENT
from saml2.server import Server
from saml2.authn_context import PASSWORD, authn_context_class_ref
from saml2.xmldsig import SIG_RSA_SHA256, DIGEST_SHA256


def server(idp):
    conf = IdPConfig()
    conf.load({
        "entityid": idp["entity_id"],
        "service": {"idp": {
            "endpoints": {"single_sign_on_service": [(idp["sso"], BINDING_HTTP_REDIRECT)]},
            "name_id_format": [NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_PERSISTENT],
            "policy": {"default": {"lifetime": {"minutes": idp.get("lifetime_minutes", 5)}, "attribute_restrictions": None, "name_form": NAME_FORMAT_BASIC}},
        }},
        "key_file": idp["key_file"],
        "cert_file": idp["cert_file"],
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "metadata": {"inline": [idp["sp_metadata"]]} if idp.get("sp_metadata") else {},
        "accepted_time_diff": 5,
        "allow_unknown_attributes": True,
        "signing_algorithm": SIG_RSA_SHA256,
        "digest_algorithm": DIGEST_SHA256,
    })
    return Server(config=conf)


def respond(srv, cmd, in_response_to, destination, sp_entity_id):
    name_id = NameID(format=cmd["name_id"]["format"], text=cmd["name_id"]["text"])
    resp = srv.create_authn_response(
        cmd.get("identity", {}), in_response_to=in_response_to, destination=destination, sp_entity_id=sp_entity_id,
        name_id=name_id, sign_assertion=cmd.get("sign_assertion", True), sign_response=cmd.get("sign_response", False),
        authn={"class_ref": PASSWORD, "authn_auth": srv.config.entityid},
        sign_alg=SIG_RSA_SHA256, digest_alg=DIGEST_SHA256,
    )
    xml = str(resp)
    return {"acs": destination, "saml_response": base64.b64encode(xml.encode()).decode(), "xml": xml}


def main(cmd):
    op, idp = cmd["op"], cmd["idp"]
    if op == "metadata":
        from saml2.metadata import create_metadata_string
        return {"xml": create_metadata_string(None, server(idp).config, 4, None, None, None, None, None).decode()}
    srv = server(idp)
    if op == "respond":
        q = parse_qs(cmd["query"])
        info = srv.parse_authn_request(q["SAMLRequest"][0], BINDING_HTTP_REDIRECT)
        req = info.message
        args = srv.response_args(req, [BINDING_HTTP_POST])
        out = respond(srv, cmd, req.id, cmd.get("destination", args["destination"]), args["sp_entity_id"])
        out.update({"relay_state": q.get("RelayState", [""])[0], "request_id": req.id, "signed_request": info.signature_check is not None})
        return out
    if op == "unsolicited":
        return respond(srv, cmd, None, cmd["acs"], cmd["sp_entity_id"])
    raise SystemExit(f"unknown op {op}")


if __name__ == "__main__":
    from saml_peer import serve
    serve(main)
