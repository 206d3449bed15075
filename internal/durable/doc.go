// Package durable writes files so that they survive a power cut: the
// content is fsynced before the file gets its name, and the directory is
// fsynced after it.
package durable
