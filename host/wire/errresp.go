package wire

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse builds the response to req in which every error code is
// code, as Kafka's AbstractRequest.getErrorResponse does: the top-level
// error code is set, and every per-item array (topics, partitions, groups,
// resources, coordinator keys) is mirrored from the request with its items'
// identifying fields copied and their error codes set. It works for every
// kmsg request at every version kmsg knows and never panics.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rv := reflect.ValueOf(resp).Elem()
	mirror(rv, reflect.ValueOf(req).Elem(), code, true)
	return resp
}

// requestFieldFor names the request array a response array mirrors when
// kmsg names them differently.
var requestFieldFor = map[string]string{
	"Coordinators": "CoordinatorKeys", // FindCoordinator v4+
}

// mirror fills dst (a response struct) from src (the matching request
// struct). Scalars with the same name and type are copied only below the
// top level (identifying fields of array items); ErrorCode is set everywhere.
func mirror(dst, src reflect.Value, code int16, top bool) {
	dt := dst.Type()
	for i := 0; i < dt.NumField(); i++ {
		f := dt.Field(i)
		if !f.IsExported() || f.Name == "Version" || f.Name == "UnknownTags" {
			continue
		}
		dv := dst.Field(i)
		if f.Name == "ErrorCode" && dv.Kind() == reflect.Int16 {
			dv.SetInt(int64(code))
			continue
		}
		var sv reflect.Value
		if src.IsValid() {
			sv = src.FieldByName(f.Name)
			if alias, ok := requestFieldFor[f.Name]; ok && !sv.IsValid() {
				sv = src.FieldByName(alias)
			}
		}
		switch {
		case dv.Kind() == reflect.Slice && dv.Type().Elem().Kind() == reflect.Struct:
			if sv.IsValid() && sv.Kind() == reflect.Slice {
				dv.Set(mirrorSlice(dv.Type(), sv, code))
			}
		case !top && sv.IsValid() && sv.Type() == dv.Type() && dv.Kind() != reflect.Slice && dv.Kind() != reflect.Pointer:
			dv.Set(sv)
		}
	}
}

// mirrorSlice makes one response item per request item. A request item
// that is a scalar (a group id, a partition number) lands in the response
// item's first field of the same type.
func mirrorSlice(t reflect.Type, src reflect.Value, code int16) reflect.Value {
	out := reflect.MakeSlice(t, src.Len(), src.Len())
	for j := 0; j < src.Len(); j++ {
		item := out.Index(j)
		if d, ok := item.Addr().Interface().(interface{ Default() }); ok {
			d.Default()
		}
		s := src.Index(j)
		if s.Kind() == reflect.Struct {
			mirror(item, s, code, false)
			continue
		}
		mirror(item, reflect.Value{}, code, false)
		for k := 0; k < item.NumField(); k++ {
			if item.Type().Field(k).IsExported() && item.Field(k).Type() == s.Type() {
				item.Field(k).Set(s)
				break
			}
		}
	}
	return out
}
