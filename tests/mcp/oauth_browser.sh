#!/usr/bin/env bash
# The "browser" of rein's OAuth tests (REIN_MCP_OAUTH_OPEN): opens the authorization address
# rein prints and follows the authorization server's redirect to rein's 127.0.0.1 callback, as
# a person's browser would after they allow access. Nothing else: no cookies, no forms.
exec curl -fsS -o /dev/null --max-time 20 -L "$1"
