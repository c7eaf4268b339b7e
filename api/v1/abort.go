package v1

// AbortRequested: the action is ABORTED, or an abort was asked of it (an
// action already finished when it was aborted), so its unfinished
// descendants are to be aborted.
func AbortRequested(ta *TaskAction) bool {
	_, asked := ta.Annotations[AnnotationAbortReason]
	return asked || PhaseOfAction(ta) == PhaseAborted
}

// Aborting: the action is ABORTED, or an abort of it is under way (asked
// of it before it finished: its object goes once its descendants have
// their reasons). It takes no new children.
func Aborting(ta *TaskAction) bool {
	p := PhaseOfAction(ta)
	return p == PhaseAborted || AbortRequested(ta) && !p.Terminal()
}

// AbortReasonOf is why an action was aborted: the reason recorded on it
// (the target of an abort), or the one its status carries (a descendant);
// empty when neither says.
func AbortReasonOf(ta *TaskAction) string {
	if r := ta.Annotations[AnnotationAbortReason]; r != "" {
		return r
	}
	if e := ta.Status.ErrorState; e != nil && e.Code == ReasonAborted {
		return e.Message
	}
	return ""
}
