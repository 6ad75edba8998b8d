// The libmosquitto 2.0 client API, for Swift. Everything in it is callable
// from Swift directly, so this shim only gathers the two headers: the client
// API and the MQTT protocol constants (MQTT_PROP_*, MQTT_RC_*, CONNACK_*).
#ifndef ALARMD_CMOSQUITTO_H
#define ALARMD_CMOSQUITTO_H

#include <mosquitto.h>
#include <mqtt_protocol.h>

#endif
