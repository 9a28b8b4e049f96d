/*
 * rein/rein.h: the umbrella header. Including it brings in every public rein header.
 */
#ifndef REIN_REIN_H
#define REIN_REIN_H

#include <rein/version.h>
#include <rein/core.h>
#include <rein/buf.h>
#include <rein/json.h>
#include <rein/doc.h>
#include <rein/arena.h>
#include <rein/cancel.h>
#include <rein/proc.h>
#include <rein/pool.h>
#include <rein/schema.h>
#include <rein/trace.h>
#include <rein/store.h>
#include <rein/metrics.h>
#include <rein/server.h>
#include <rein/claims.h>
#include <rein/verify.h>
#include <rein/tools.h>
#include <rein/skills.h>
#include <rein/history.h>
#include <rein/provider.h>
#include <rein/agent.h>
#include <rein/mcp.h>
#include <rein/loop.h>
#include <rein/plan.h>
#include <rein/session.h>
#include <rein/gateway.h>

#endif /* REIN_REIN_H */
