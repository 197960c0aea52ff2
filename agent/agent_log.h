/* SPDX-License-Identifier: MIT */
/*
 * The agent's log: one line per event on stderr. Under systemd (JOURNAL_STREAM set) each line starts with the
 * sd-daemon priority prefix ("<6>"), which journald turns into the entry's priority; elsewhere with "rtune agent: ".
 */
#ifndef RT_AGENT_LOG_H
#define RT_AGENT_LOG_H

enum rt_log_level { RT_LOG_ERR = 3, RT_LOG_WARNING = 4, RT_LOG_NOTICE = 5, RT_LOG_INFO = 6, RT_LOG_DEBUG = 7 };

/* Writes one line (newlines in the message become spaces). Never fails visibly. */
void rt_agent_log(enum rt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
