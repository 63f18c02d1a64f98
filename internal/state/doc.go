// Package state owns procmon's state directory: where it is, whether it is
// safe to use, and the durable records in it (settings, runs with their
// frozen policy and command budget, monitor records with their receipts).
//
// Every record is written whole: a temp file in the same directory, write,
// fsync, close, rename over the old one, fsync of the directory. Readers
// never see a half-written record and never need a lock; writers that read,
// modify and write take the record's flock. Rename is atomic on local file
// systems only: a state directory on NFS is not supported.
//
// Every record carries a schema version and an xxhash64 checksum of its body;
// a record that fails either check is state_corrupt and is never trusted.
// The package never starts, signals or inspects processes.
package state
